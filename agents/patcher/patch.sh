#!/bin/sh
# Applies patches/$SSE_TASK_ID.diff in the working directory (the task's
# source); a task without a patch is left as it is.
p=/opt/patcher/patches/$SSE_TASK_ID.diff
if [ ! -f "$p" ]; then
	echo "patcher: no patch for $SSE_TASK_ID"
	exit 0
fi
exec patch -p1 <"$p"
