// Package runtimebin provides the runtime image of a tool layer: which image
// to use, the platform picked from its index, and a check that it holds what
// a tool image needs.
package runtimebin
