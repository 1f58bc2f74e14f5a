#!/usr/bin/env bash
# Installs the Debian packages perfsleuth needs that are not installed yet.
# With --unless-removing first: only those that install beside the installed packages, removing none
# (libboost1.81-dev conflicts with Debian's default libboost-dev, which it must not
# displace); the others are said and left out.
set -euo pipefail
keep_installed=0
if [ "${1:-}" = "--unless-removing" ]; then
  keep_installed=1
  shift
fi
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" > /dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  if [ $keep_installed -eq 1 ]; then
    echo "perfsleuth's optional examples use these Debian packages: ${missing[*]}" >&2
  else
    echo "perfsleuth needs these Debian packages: ${missing[*]}" >&2
  fi
  echo "run as root: apt-get install -y ${missing[*]}" >&2
  exit $((1 - keep_installed))
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ $keep_installed -eq 1 ]; then
  fits=()
  for p in "${missing[@]}"; do
    if plan=$(apt-get install -s -qq --no-install-recommends "$p" 2>/dev/null) \
      && ! grep -q '^Remv' <<<"$plan"; then
      fits+=("$p")
    else
      echo "not installing $p: it conflicts with installed packages (its examples are not built)" >&2
    fi
  done
  [ ${#fits[@]} -eq 0 ] && exit 0
  missing=("${fits[@]}")
fi
echo "installing: ${missing[*]}" >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
