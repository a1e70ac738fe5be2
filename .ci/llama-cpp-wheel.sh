#!/usr/bin/env bash
# Installs llama-cpp-python into a virtualenv from a wheel built once and kept in a cache folder.
#
# Why: pip builds llama-cpp-python from its source archive, and compiling llama.cpp takes 5-7 minutes on
# 2 cores. It must be built with the CMAKE_ARGS given (the Makefile passes -DGGML_NATIVE=OFF, a portable x86-64 build), never
# taken from pip's own wheel cache nor kept from an earlier install: either may hold a native build, and
# versions 0.3.35 and 0.3.36 built natively on a CPU with AVX-512 and AMX crash in their first decode
# (docs/real-servers.md). So the wheel is built with pip's cache off, and kept here under a key made of
# everything it depends on: the llama-cpp-python version, the Python version and ABI, the platform
# (OS and machine architecture) and the exact CMAKE_ARGS. Another value of any of them builds another wheel.
#
# Usage:  CMAKE_ARGS="-DGGML_NATIVE=OFF" .ci/llama-cpp-wheel.sh PYTHON CACHE_DIR [REQUIREMENT]
#   PYTHON       the virtualenv's python, which installs the wheel and whose version and platform are keyed
#   CACHE_DIR    where the wheels are kept, e.g. ~/.cache/agentbalance/wheels
#   REQUIREMENT  the version wanted, default "llama-cpp-python>=0.3"
#
# The version is resolved without compiling: pip downloads the source archive (its name carries the version;
# pip's HTTP cache serves it again). A wheel is built in a temporary folder inside CACHE_DIR and moved under
# its key only when complete (a rename), so an interrupted build never leaves a wheel that a later run trusts.
# To force a rebuild, delete CACHE_DIR, or the key's folder in it.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: CMAKE_ARGS=... $0 PYTHON CACHE_DIR [REQUIREMENT]" >&2
    exit 2
fi
python=$1
cache=$2
requirement=${3:-"llama-cpp-python>=0.3"}
export CMAKE_ARGS=${CMAKE_ARGS:-}

mkdir -p "$cache"
work=$(mktemp -d "$cache/.tmp.XXXXXX")  # inside the cache: the final move is a rename on one file system
trap 'rm -rf "$work"' EXIT

# 1. The version pip would install: the source archive, never a prebuilt or cached wheel.
"$python" -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$work/sdist" "$requirement"
sdist=$(find "$work/sdist" -maxdepth 1 -name 'llama_cpp_python-*.tar.gz' | head -n 1)
if [ -z "$sdist" ]; then
    echo "$0: pip downloaded no llama-cpp-python source archive for '$requirement'" >&2
    exit 1
fi
version=$(basename "$sdist" .tar.gz)
version=${version#llama_cpp_python-}

# 2. The key: version, Python implementation, version and ABI flags, platform, CMAKE_ARGS (readable, and
#    hashed so that two argument strings never share a folder), e.g.
#    llama-cpp-python-0.3.36-cpython-311-linux-x86_64-cmake-DGGML_NATIVE=OFF-<8 hex digits>
key=$(VERSION=$version "$python" - <<'EOF'
import hashlib, os, re, sys, sysconfig

args = os.environ["CMAKE_ARGS"]
readable = re.sub(r"[^A-Za-z0-9.=+-]+", "_", args.strip()).lstrip("-")[:60] or "none"
digest = hashlib.sha256(args.encode()).hexdigest()[:8]
python = "%s-%d%d%s" % (sys.implementation.name, *sys.version_info[:2], getattr(sys, "abiflags", ""))
print(f"llama-cpp-python-{os.environ['VERSION']}-{python}-{sysconfig.get_platform()}-cmake-{readable}-{digest}")
EOF
)
keydir="$cache/$key"

cached_wheel() {
    if [ -d "$keydir" ]; then
        find "$keydir" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" | head -n 1
    fi
}

build() {
    echo "Building llama-cpp-python $version with CMAKE_ARGS=\"$CMAKE_ARGS\" (5-7 minutes on 2 cores) into $keydir" >&2
    "$python" -m pip wheel --quiet --no-deps --no-cache-dir -w "$work/wheel" "$sdist"
    built=$(find "$work/wheel" -maxdepth 1 -name 'llama_cpp_python-*.whl' | head -n 1)
    if [ -z "$built" ]; then
        echo "$0: pip built no llama-cpp-python wheel" >&2
        exit 1
    fi
    mkdir -p "$keydir"
    printf 'llama-cpp-python %s\nCMAKE_ARGS=%s\npython: %s\nbuilt: %s\n' "$version" "$CMAKE_ARGS" \
        "$("$python" -c 'import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_platform())')" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$keydir/build-info.txt"
    mv "$built" "$keydir/"  # the wheel appears under its key complete, or not at all
}

install_wheel() {
    "$python" -m pip install --quiet --no-deps --force-reinstall "$1"
}

# 3. Install the cached wheel; build it first when the key has none. A cached wheel that pip cannot install
#    (a damaged file) is removed and built again.
wheel=$(cached_wheel)
if [ -n "$wheel" ]; then
    echo "Installing llama-cpp-python $version from the wheel cache: $wheel" >&2
    if install_wheel "$wheel"; then
        exit 0
    fi
    echo "$0: the cached wheel does not install; building it again" >&2
    rm -f "$wheel"
fi
build
install_wheel "$(cached_wheel)"
