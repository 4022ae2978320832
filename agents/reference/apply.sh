#!/bin/sh
# Applies /reference/patch.diff, the task's reference patch, in the working
# directory (the task's source). Outside a reference run there is no patch,
# and the agent says so and fails.
p=/reference/patch.diff
if [ ! -r "$p" ]; then
	echo "reference: no reference patch at $p: this agent works only in a reference run (ssebench run --agent reference)" >&2
	exit 1
fi
# --forward: a patch that is already applied (or reversed) is an error, not
# a question; --batch: never ask.
exec patch -p1 --forward --batch <"$p"
