// Package agent provides the agents of an SSEBench home: the folders under
// agents/ that hold an agent.yaml and a Dockerfile (SPEC.md section 6).
package agent
