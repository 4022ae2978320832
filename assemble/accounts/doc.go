// Package accounts computes the account files of the tool image (SPEC.md
// section 4, step 3) without running shadow-utils: it rewrites /etc/passwd,
// /etc/group, /etc/shadow, /etc/gshadow, /etc/subuid and /etc/subgid exactly
// as Debian 12's shadow-utils (4.13) leaves them after this sequence:
//
//	userdel -r  <each user with uid 1000 or named model, in passwd order>
//	groupdel -f <each group with gid 1000 or named model, in group order>
//	groupadd -g 1000 model
//	useradd -u 1000 -g 1000 -M -d /home/model -s /bin/bash model
//	usermod -G "" model
//	useradd --system --user-group -d /nonexistent -s /usr/sbin/nologin sse-runner
//	    (only when there is no user sse-runner)
//	usermod -G "" sse-runner
//
// It keeps what shadow-utils keeps: unchanged lines byte for byte (comments,
// blank lines and NIS "+"/"-" lines included), the order of the lines, new
// entries inserted before the first NIS line (else at the end). It also
// does what shadow-utils does that is easy to miss: every line it writes
// ends in a newline, an edited group or gshadow line is written anew from
// its fields, and adding model's subordinate ids sorts /etc/subuid and
// /etc/subgid by range.
//
// The golden tests in testdata were produced by the real tools; see
// testdata/gen.sh.
package accounts
