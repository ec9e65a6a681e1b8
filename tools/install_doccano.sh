#!/usr/bin/env bash
# Doccano (PyPI `doccano`, the annotation tool whose JSONL exports llm_nb.doccano reads and llm_nb.annotate writes
# back, MIT) in its own venv under the llm_nb cache, keyed by version, for tests/test_doccano.py: a real Doccano,
# offline, on 127.0.0.1.
# Its own venv because it pins its own Django, pandas (<2) and SQLAlchemy (<2), which must not move the project's.
# Idempotent: a finished venv is reused (the marker `.llm_nb-ok` is written last). Prints the venv on its last line.
# Doccano 1.8.4 supports Python 3.8-3.11 (pandas<2 has no wheels for 3.12): `python3` must be one of them
# (DOCCANO_PYTHON names another). Fixes applied, each needed here:
#  - marshmallow<4: Doccano's environs (9.5) uses marshmallow 3's API; with marshmallow 4 `doccano` fails on start.
#  - numpy<2: Doccano's pandas (1.5) is built against numpy 1; with numpy 2 `import pandas` fails.
set -euo pipefail
DOCCANO_VERSION=${DOCCANO_VERSION:-1.8.4}
PY=${DOCCANO_PYTHON:-python3}
CACHE=${LLM_NB_CACHE:-$HOME/.cache/llm_nb}
venv="$CACHE/doccano-$DOCCANO_VERSION"
if [ ! -f "$venv/.llm_nb-ok" ]; then
  t0=$(date +%s)
  if ! "$PY" -c "import sys; sys.exit(not (3, 8) <= sys.version_info[:2] <= (3, 11))"; then
    echo "install_doccano: Doccano $DOCCANO_VERSION needs Python 3.8-3.11, and $PY is $("$PY" --version 2>&1):" \
         "set DOCCANO_PYTHON to one" >&2
    exit 1
  fi
  echo "making the Doccano venv $venv (doccano $DOCCANO_VERSION, ~0.7 GB, ~90 s)" >&2
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q "doccano==$DOCCANO_VERSION" "marshmallow<4" "numpy<2" >&2
  # `doccano` makes $DOCCANO_HOME (default ~/doccano) on import: point it at a scratch folder for the check
  home=$(mktemp -d)
  trap 'rm -rf "$home"' EXIT
  DOCCANO_HOME="$home" "$venv/bin/doccano" --help >/dev/null
  "$venv/bin/python" -c "import pandas, environs" >&2
  touch "$venv/.llm_nb-ok"
  echo "Doccano venv ready in $(( $(date +%s) - t0 ))s" >&2
fi
echo "$venv"
