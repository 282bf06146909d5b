#!/bin/sh
# Install the Debian packages Tally needs, if any are missing.
# Says what it installs; does nothing when everything is there. Needs root (or
# sudo) and apt-get to install; otherwise it prints the command to run.
set -u
missing=""
need() { # need PKGCONFIG_NAME|COMMAND DEBIAN_PACKAGE
    case "$1" in
        cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 || missing="$missing $2" ;;
        *) pkg-config --exists "$1" 2>/dev/null || missing="$missing $2" ;;
    esac
}
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
need cmd:cc gcc
need cmd:make make
need jansson libjansson-dev
need sqlite3 libsqlite3-dev
need zlib zlib1g-dev
need cmocka libcmocka-dev
need cmd:gnuplot gnuplot-nox
need cmd:sqlite3 sqlite3
[ -z "$missing" ] && exit 0
echo "install-deps: missing Debian packages:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "install-deps: not root; run: apt-get install$missing" >&2; exit 1; fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: no apt-get here; install:$missing" >&2; exit 1
fi
echo "install-deps: running apt-get update && apt-get install -y$missing" >&2
$SUDO apt-get update -qq >&2 || exit 1
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2 || exit 1
echo "install-deps: installed:$missing" >&2
