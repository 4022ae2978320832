#!/bin/sh
# make-proj.sh DIR creates the oracle test's project at DIR with one commit:
# ignore rules at several depths (negations, directory-only rules, ignored
# files present), .gitattributes with CRLF files, symlinks (relative,
# absolute, dangling, to a directory), hard links, executables, set-id
# bits, world-writable entries, names with spaces and non-ASCII characters,
# empty directories, a nested repository and a submodule-style .git file. Run by case/Dockerfile.
set -eux
D=$1
mkdir -p "$D"
cd "$D"
git init -q -b main

cat > .gitignore <<'IGN'
# root rules
*.log
!keep.log
/build/
tmp/
*.o
secret\ file.txt
IGN
printf 'package main\n\nfunc main() {}\n' > main.go
printf '# Oracle\n' > README.md
printf 'obsolete\n' > obsolete.txt
printf '#!/bin/sh\necho run\n' > run.sh; chmod 0755 run.sh
printf '#!/bin/sh\necho owner only\n' > owner-exec.sh; chmod 0744 owner-exec.sh
printf '#!/bin/sh\necho group only\n' > group-exec.sh; chmod 0654 group-exec.sh
printf 'private\n' > private.txt; chmod 0600 private.txt
printf 'space\n' > 'file with space.txt'
printf 'secret\n' > 'secret file.txt'
printf 'unicode\n' > "$(printf 'na\303\257ve-\303\274.txt')"
printf 'kanji\n' > "$(printf '\346\227\245\346\234\254.md')"
printf 'log\n' > app.log; chmod 0666 app.log
printf 'keep\n' > keep.log
printf 'obj\n' > main.o
mkdir -p build/sub; printf 'bin\n' > build/out.bin; printf '!*\n' > build/.gitignore
printf 'built\n' > build/sub/x

mkdir -p sub/deeper sub/gen sub/tmp sub/emptydir
printf '!important.log\n*.tmp\ngen/\n' > sub/.gitignore
printf 'important\n' > sub/important.log
printf 'debug\n' > sub/debug.log
printf 'x\n' > sub/x.tmp
printf 'generated\n' > sub/gen/out.txt
printf 'tmp\n' > sub/tmp/z
printf '!*.tmp\n' > sub/deeper/.gitignore
printf 'y\n' > sub/deeper/y.tmp
printf 'not a dir\n' > sub/deeper/gen
printf 'deep\n' > sub/deeper/deep.go

# World-writable and set-id entries, a setgid directory.
mkdir -p data; chmod 0777 data
printf 'ww\n' > data/ww.txt; chmod 0666 data/ww.txt
printf 'wx\n' > data/wx.sh; chmod 0777 data/wx.sh
mkdir -p shared-group; chmod 2775 shared-group
printf 'g\n' > shared-group/file
printf 'suid\n' > suid-tool; chmod 4755 suid-tool
mkdir -p sticky; chmod 1777 sticky
printf 's\n' > sticky/file

# Links.
ln -s main.go link-rel
ln -s /etc/hostname link-abs
ln -s does-not-exist link-dangling
ln -s sub link-dir
ln main.go hard.go
ln data/ww.txt data/ww-hard.txt

# Empty directories.
mkdir -p empty nested/empty/deeper

# Line endings: CRLF files that .gitattributes make git add store with LF
# (text=auto, eol=crlf), and others it keeps (binary, -text deeper down).
printf '* text=auto\n*.bat text eol=crlf\n*.bin binary\n' > .gitattributes
printf 'int a;\r\nint b;\r\n' > crlf.c
printf '@echo off\r\necho hi\r\n' > run.bat
printf 'a\r\nb\r\n' > data.bin
mkdir -p sub/attrs
printf '*.txt -text\n' > sub/attrs/.gitattributes
printf 'a\r\nb\r\n' > sub/attrs/raw.txt

# A nested repository and a submodule-style .git file.
mkdir -p vendor/lib
printf 'package lib\n' > vendor/lib/lib.go
git -C vendor/lib init -q -b main
git -C vendor/lib add -A
GIT_AUTHOR_DATE='@1700000000 +0000' GIT_COMMITTER_DATE='@1700000000 +0000' \
  git -C vendor/lib -c user.name=dev -c user.email=dev@example.invalid commit -q -m 'lib'
mkdir -p modules/sm
printf 'gitdir: ../../.git/modules/sm\n' > modules/sm/.git
printf 'package sm\n' > modules/sm/sm.go

git add -A
GIT_AUTHOR_DATE='@1700000000 +0000' GIT_COMMITTER_DATE='@1700000000 +0000' \
  git -c user.name=dev -c user.email=dev@example.invalid commit -q -m 'first'
