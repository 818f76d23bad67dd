#!/usr/bin/env bash
# CI entry point for the proofs: install Coq if needed, then check.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v coqc >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq coq libcoq-stdlib ocaml-findlib
fi
exec bash "$here/check.sh"
