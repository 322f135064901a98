#!/usr/bin/env bash
# Installs the Debian packages attune needs to build and test, only those that are missing.
# Idempotent; sourced by scripts/test.sh and scripts/demo.sh.
set -euo pipefail

attune_packages=(
  cmake g++ make pkg-config
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcurl4-openssl-dev
  libyaml-cpp-dev libtomlplusplus-dev libssl-dev libgtest-dev libgmock-dev libeigen3-dev
)

missing=()
for package in "${attune_packages[@]}" "$@"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "attune: error: missing Debian packages: ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
    exit 2
  fi
  as_root=()
  [ "$(id -u)" -ne 0 ] && as_root=(sudo)
  echo "attune: installing ${missing[*]}" >&2
  if ! "${as_root[@]}" apt-get update -qq ||
     ! DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "attune: error: could not install ${missing[*]} with apt-get; install them by hand and rerun" >&2
    exit 2
  fi
fi
