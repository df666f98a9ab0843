#!/bin/sh
# SPDX-License-Identifier: MIT
# Lists the CPython interpreters the python suite runs against, one per line:
# "VERSION PATH". Searches pyenv's versions and the system's python3.X;
# $LW_TEST_PYTHONS (paths separated by spaces) replaces the search. One
# interpreter per version (the first found), so that test names are unique.
root=${PYENV_ROOT:-${HOME:-/root}/.pyenv}
candidates=${LW_TEST_PYTHONS:-"$root/versions/*/bin/python /usr/bin/python3.* /usr/local/bin/python3.*"}
seen_paths=" "
seen_versions=" "
for p in $candidates; do
	case $p in *-config) continue ;; esac
	[ -f "$p" ] && [ -x "$p" ] || continue
	real=$(readlink -f "$p")
	case $seen_paths in *" $real "*) continue ;; esac
	seen_paths="$seen_paths$real "
	version=$("$p" -E -s -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || continue
	case $seen_versions in *" $version "*) continue ;; esac
	seen_versions="$seen_versions$version "
	echo "$version $p"
done
exit 0
