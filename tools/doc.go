// Package tools is the room of the programs that develop and test ssebench
// but are not part of it. It holds no code of its own:
//
//   - bench: benchmarks that print ssebench's figures side by side with
//     BuildKit's on the same input (`go run ./tools/bench tool`, rebuild,
//     mirror, gateway, eval, eval-build, grade);
//   - hostile-summary: the table of the hostile-input suite that
//     scripts/test.sh prints last;
//   - osimage, pause, podfilter: the test machine's OS image, the test
//     cluster's sandbox image and its NetworkPolicy enforcer, used by
//     scripts/;
//   - buildkit, kubernetes, netpol: modules of their own (their own go.mod)
//     that pin the versions of buildkitd, the Kubernetes binaries and
//     kube-network-policies that scripts/ build and cache.
package tools
