#!/bin/bash
# gen.sh regenerates the golden outputs testdata/<case>/want/ from
# testdata/<case>/in/ by running the real shadow-utils (Debian 12, shadow
# 4.13: userdel, groupdel, groupadd, useradd, usermod) inside a scratch
# chroot that holds only those binaries, their libraries and the case's
# files. It needs root and those tools; the Go tests need neither.
# Run it from anywhere: bash testdata/gen.sh
#
# Why a chroot and not --prefix: with --prefix, shadow 4.13's userdel looks
# for the mail spool under a truncated name (/var/mail/ubunt for ubuntu), so
# the removal list would be wrong.
#
# The sequence is SPEC.md section 4 step 3, spelt as shell:
#   userdel -r  each user with uid 1000 or named model (passwd order)
#   groupdel -f each group with gid 1000 or named model (group order)
#   groupadd -g 1000 model
#   useradd -u 1000 -g 1000 -M -d /home/model -s /bin/bash model
#   usermod -G "" model
#   useradd --system --user-group -d /nonexistent -s /usr/sbin/nologin sse-runner
#     (only when there is no user sse-runner)
#   usermod -G "" sse-runner
#
# Every user's home (except "/") and mail spool /var/mail/<name> is created
# in the scratch root, owned by that user, so want/removed lists what
# userdel -r deleted.
set -euo pipefail
cd "$(dirname "$0")"
# SOURCE_DATE_EPOCH fixes the day shadow writes into /etc/shadow:
# 1700000000 / 86400 = day 19675. The Go tests pass WithDay(19675).
export SOURCE_DATE_EPOCH=1700000000

files="passwd group shadow gshadow login.defs subuid subgid"

for dir in */; do
	c=${dir%/}
	[ -d "$c/in" ] || continue
	R=$(mktemp -d)
	mkdir -p "$R/etc"
	# A merged-/usr layout like Debian 12's, so ldd's paths resolve.
	mkdir -p "$R/usr/lib" "$R/usr/lib64" "$R/usr/sbin"
	ln -s usr/lib "$R/lib"
	ln -s usr/lib64 "$R/lib64"
	for b in useradd userdel groupadd groupdel usermod; do
		for f in /usr/sbin/$b $(ldd /usr/sbin/$b | awk '/=>/ {print $3} /^\t\// {print $1}'); do
			mkdir -p "$R$(dirname "$f")"
			cp -nL "$f" "$R$f"
		done
	done
	for f in $files; do
		if [ -e "$c/in/$f" ]; then cp "$c/in/$f" "$R/etc/$f"; fi
	done
	# Homes and mail spools, owned by their users.
	maildir=/var/mail
	if [ -e "$R/etc/login.defs" ]; then
		maildir=$(awk '$1 == "MAIL_DIR" {d = $2} END {print d ? d : "/var/mail"}' "$R/etc/login.defs")
	fi
	mkdir -p "$R$maildir"
	while IFS=: read -r name _ uid _ _ home _ || [ -n "$name" ]; do
		case "$name" in ''|'#'*|+*|-*) continue ;; esac
		if ! [[ $uid =~ ^[[:space:]]*[+]?[0-9]+$ ]]; then continue; fi
		uid=$((10#${uid//[[:space:]+]/}))
		if [ -n "$home" ] && [ "$home" != / ]; then
			mkdir -p "$R$home"
			chown "$uid" "$R$home"
		fi
		touch "$R$maildir/$name"
		chown "$uid" "$R$maildir/$name"
	done < "$R/etc/passwd"
	(cd "$R" && find . -mindepth 1 -not -path './etc' -not -path './etc/*' -not -path './usr' -not -path './usr/*' -not -path ./lib -not -path ./lib64 | sort) > "$R.before"

	# Ids compare as shadow reads them (strtoll base 10: leading blanks
	# and a sign are fine, anything after the digits is not).
	users=$(awk -F: 'NF==7 && $1 !~ /^[-+]/ && (($3 ~ /^[ \t]*[+]?[0-9]+$/ && $3+0==1000) || $1=="model") {print $1}' "$R/etc/passwd")
	for u in $users; do
		chroot "$R" /usr/sbin/userdel -r "$u" 2>>"$R.log" || echo "userdel $u: $?" >>"$R.log"
	done
	groups=$(awk -F: 'NF==4 && $1 !~ /^[-+]/ && (($3 ~ /^[ \t]*[+]?[0-9]+$/ && $3+0==1000) || $1=="model") {print $1}' "$R/etc/group")
	for g in $groups; do
		chroot "$R" /usr/sbin/groupdel -f "$g" 2>>"$R.log"
	done
	chroot "$R" /usr/sbin/groupadd -g 1000 model
	chroot "$R" /usr/sbin/useradd -u 1000 -g 1000 -M -d /home/model -s /bin/bash model 2>>"$R.log"
	chroot "$R" /usr/sbin/usermod -G "" model
	if ! grep -q '^sse-runner:' "$R/etc/passwd"; then
		chroot "$R" /usr/sbin/useradd --system --user-group -d /nonexistent -s /usr/sbin/nologin sse-runner 2>>"$R.log"
	fi
	chroot "$R" /usr/sbin/usermod -G "" sse-runner

	(cd "$R" && find . -mindepth 1 -not -path './etc' -not -path './etc/*' -not -path './usr' -not -path './usr/*' -not -path ./lib -not -path ./lib64 | sort) > "$R.after"
	rm -rf "$c/want"
	mkdir -p "$c/want"
	for f in $files; do
		if [ -e "$R/etc/$f" ]; then cp "$R/etc/$f" "$c/want/$f"; fi
	done
	# Top-level removed paths only (a removed home takes its subtree along).
	comm -23 "$R.before" "$R.after" | while read -r p; do
		parent=$(dirname "$p")
		if [ "$parent" = . ] || [ -e "$R/$parent" ]; then echo "${p#.}"; fi
	done > "$c/want/removed"
	# Warnings that only say the scratch root lacks /proc or the shells.
	echo "$c: $(grep -v -e 'opendir /proc' -e 'non-executable shell' "$R.log" | tr '\n' ' ')"
	rm -rf "$R" "$R.before" "$R.after" "$R.log"
done
