#!/usr/bin/env bash
# The main job: set up, build, and run metaguard's clang-tidy checks over the
# bundled examples, printing every finding with its notes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# Linting needs the plugin and the compile database, not the compiled examples.
metaguard_setup_main metaguard_tidy
cd "$METAGUARD_ROOT"
# Findings are the point here, so they do not fail the command; a tool error does.
python3 tools/metaguard-tidy -p "$METAGUARD_BUILD_DIR" --plugin "$METAGUARD_BUILD_DIR/lib/libmetaguard_tidy.so" \
  --exit-zero "$@" examples/
