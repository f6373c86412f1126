#!/bin/bash
# SPDX-License-Identifier: MIT
# The core's layering, checked on the source (tests/source/layers.py).
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/layers.py" "$here/../.."
