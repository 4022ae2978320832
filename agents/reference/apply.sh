#!/bin/sh
# Applies /reference/patch.diff, the task's reference patch, in the working
# directory (the task's source). Outside a reference run there is no patch,
# and the agent says so and fails.
p=/reference/patch.diff
if [ ! -r "$p" ]; then
	echo "reference: no reference patch at $p: this agent works only in a reference run (ssebench run --agent reference)" >&2
	exit 1
fi
# --fuzz=0: the reference patch must apply as written (patch would
# otherwise drop up to two lines of context and apply a hunk anywhere it
# half fits); --forward: a patch already applied is an error, not a
# question; --batch: never ask.
exec patch -p1 --fuzz=0 --forward --batch <"$p"
