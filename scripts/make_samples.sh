#!/usr/bin/env bash
# Regenerates samples/ (model + digits data); see scripts/make_samples.py.
cd "$(dirname "${BASH_SOURCE[0]}")/.." && exec /usr/bin/python3 scripts/make_samples.py "$@"
