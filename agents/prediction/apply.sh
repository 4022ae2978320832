#!/bin/sh
# Applies /prediction/patch.diff in the working directory (the task's
# source), whole or not at all. The exit status tells `ssebench grade`
# what happened: 0 applied, 3 an empty patch, 4 a patch that does not
# apply (the tree is left as it was).
p=/prediction/patch.diff
if [ ! -r "$p" ]; then
	echo "prediction: no patch at $p: this agent works only under \`ssebench grade\`" >&2
	exit 1
fi
if [ ! -s "$p" ]; then
	echo "prediction: the patch is empty: nothing to apply"
	exit 3
fi
# A dry run first, so a patch that applies in part changes nothing.
# --forward: a patch already applied is an error, not a question; --batch:
# never ask; --fuzz=0: every hunk's context must match (at any offset),
# as git apply asks, so a hunk written for other lines is refused rather
# than put somewhere near; --no-backup-if-mismatch: no *.orig beside a
# file (it would be graded, and be in final.patch).
opts="-p1 --forward --batch --fuzz=0 --no-backup-if-mismatch"
# shellcheck disable=SC2086 # opts are words
if ! patch $opts --dry-run <"$p"; then
	echo "prediction: the patch does not apply" >&2
	exit 4
fi
# shellcheck disable=SC2086
exec patch $opts <"$p"
