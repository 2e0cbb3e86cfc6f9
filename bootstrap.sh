#!/usr/bin/env bash
# One command to a working kit: uv, kit's own environment, the dataset, a first small audit.
# Safe to re-run: every step skips what is already done, and an interrupted step starts over.
set -euo pipefail
USER_PATH="$PATH"   # the user's own PATH: bootstrap extends its copy when it installs uv

usage() {
  cat <<'EOF'
Usage: ./bootstrap.sh [options]

Sets up kit on this machine and runs a first small audit:
  1. uv (Homebrew on macOS via the Brewfile, pip elsewhere)
  2. kit's own environment in .venv (uv, binary wheels, bytecode compiled)
  3. the stacks available on this platform, from the lock files in stacks/
     (on Apple silicon the x86_64 ones run under Rosetta 2), after an estimate:
     which, their download size and about how long, at a rate measured here
  4. the dataset: the paper's Swiss-Prot subset from UniProt (cached after the first
     fetch); offline, the built-in synthetic set, saying so
  5. a smoke audit: the null experiment (repeat) and a few seeds, then the budget
     and a sentence on how to read it
  6. `kit` on your PATH: a link in ~/.local/bin (XDG_BIN_HOME), as uv and pipx do

Options:
  --stacks LIST  stacks to build, comma-separated, or 'all' (default) or 'none'
                 (`.venv/bin/kit stacks` lists them; the MKL stack alone is ~1.7 GB)
  --no-stacks    the same as --stacks none
  --containers   also each built stack's container image (podman, debootstrap;
                 docs/containers.md), the first on Debian trixie too, and the
                 smoke audit runs the container and os factors on it
  --no-fetch     do not contact UniProt; use the synthetic set (or a cached fetch)
  --no-audit     set up only; skip the smoke audit
  --n N          proteins in the smoke audit (default 1000: all four models learn)
  --python PATH  interpreter for kit's environment (default: 3.12 if found, else python3)
  --no-link      do not link `kit` into ~/.local/bin (.venv/bin/kit always works)
  --only-link    only (re)make that link
  -h, --help     this text
Environment: KIT_HOME moves everything kit writes (default: the user data directory).
EOF
}

AUDIT=1
CONTAINERS=0
N=1000   # kit.data.dataset.FIRST_LOOK_N: at 600 the MLP predicts one class
STACKS=all
FETCH=1
PYTHON=""
LINK=1
ONLY_LINK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-audit) AUDIT=0 ;;
    --no-fetch) FETCH=0 ;;
    --stacks) STACKS="${2:?--stacks needs a list, all or none}"; shift ;;
    --no-stacks) STACKS=none ;;
    --containers) CONTAINERS=1 ;;
    --n) N="${2:?--n needs a number}"; shift ;;
    --python) PYTHON="${2:?--python needs a path}"; shift ;;
    --no-link) LINK=0 ;;
    --only-link) ONLY_LINK=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bootstrap: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

cd "$(dirname "$0")"
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { echo "bootstrap: error: $*" >&2; exit 1; }
trap 'echo "bootstrap: interrupted or failed; re-run ./bootstrap.sh to continue" >&2' ERR INT

# `kit` as a command: a link in the user's bin folder to this checkout's .venv/bin/kit.
# Whether that folder is on PATH is judged by the PATH the user's shell has (saved above, before
# bootstrap adds uv's folder to its own) and by the one a new login shell would have.
KIT_CMD=.venv/bin/kit
on_path() { case ":$2:" in *":$1:"*) return 0 ;; *) return 1 ;; esac; }
login_path() {
  # A new login shell's PATH, if it can be asked cheaply (bounded; nothing is read from stdin).
  local sh="${SHELL:-}"
  [ -n "$sh" ] && [ -x "$sh" ] && command -v timeout >/dev/null 2>&1 || return 1
  HOME="$HOME" timeout 5 "$sh" -lc 'printenv PATH' </dev/null 2>/dev/null | tail -n 1
}
path_line() {
  # The line that puts $1 on the PATH of the user's shell, and where it goes.
  local dir="$1" shown="$1"
  case "$dir" in "$HOME"/*) shown="\$HOME/${dir#"$HOME"/}" ;; esac
  local line="echo 'export PATH=\"$shown:\$PATH\"' >>" f
  case "$(basename "${SHELL:-sh}")" in
    fish) echo "    fish_add_path $shown" ;;
    zsh)  echo "    $line ~/.zprofile"; echo "    $line ~/.zshrc" ;;
    bash)
      # a login shell (a new terminal on macOS, ssh, `bash -l`) reads the first of these that
      # exists, not ~/.bashrc; ~/.bashrc is for the other interactive shells
      for f in .bash_profile .bash_login .profile; do [ -e "$HOME/$f" ] && break; done
      echo "    $line ~/$f"; echo "    $line ~/.bashrc" ;;
    *)    echo "    $line ~/.profile" ;;
  esac
}
link_kit() {
  local bin="${XDG_BIN_HOME:-$HOME/.local/bin}" target="$PWD/.venv/bin/kit" login=""
  mkdir -p "$bin"
  if [ -e "$bin/kit" ] && [ ! -L "$bin/kit" ]; then
    echo "bootstrap: $bin/kit exists and is not a link made by kit; left as it is (use .venv/bin/kit)" >&2
    return 0
  fi
  ln -sfn "$target" "$bin/kit"
  say "linked $bin/kit -> $target"
  login=$(login_path) || login=""
  if on_path "$bin" "$USER_PATH"; then
    KIT_CMD=kit
    if [ -n "$login" ] && ! on_path "$bin" "$login"; then
      echo "bootstrap: $bin is on this shell's PATH but not on a new login shell's; to keep it, run:"
      path_line "$bin"
    fi
  elif [ -n "$login" ] && on_path "$bin" "$login"; then
    KIT_CMD="$bin/kit"
    echo "bootstrap: $bin is on a new shell's PATH, not on this one's: open a new terminal;"
    echo "  until then, type $bin/kit"
  else
    KIT_CMD="$bin/kit"
    echo "bootstrap: $bin is not on your PATH, so \`kit\` is not found yet; to add it, run:"
    path_line "$bin"
    echo "  then open a new terminal; until then, type $bin/kit"
  fi
}
if [ "$ONLY_LINK" = 1 ]; then
  [ -x .venv/bin/kit ] || die "no .venv/bin/kit yet: run ./bootstrap.sh first"
  link_kit
  say "Next: $KIT_CMD tui   or   $KIT_CMD run --factor threads   (see README.md)"
  exit 0
fi

# Offline machines cannot download interpreters; fail fast instead of hanging.
export UV_PYTHON_DOWNLOADS="${UV_PYTHON_DOWNLOADS:-automatic}"
export UV_COMPILE_BYTECODE=1   # worker start-up dominates small runs without .pyc files

# 1. uv ------------------------------------------------------------------------------------
if ! command -v uv >/dev/null 2>&1; then
  if [ "$(uname -s)" = Darwin ] && command -v brew >/dev/null 2>&1; then
    say "installing uv with Homebrew (Brewfile)"
    brew bundle --file=Brewfile
  else
    say "installing uv with pip"
    command -v python3 >/dev/null 2>&1 || die "no python3 found; install Python 3.11+ first"
    python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv \
      || die "could not install uv with pip"
    export PATH="$(python3 -m site --user-base)/bin:$PATH"
  fi
fi
command -v uv >/dev/null 2>&1 || die "uv is not on PATH after installing it"

# 2. kit's environment ---------------------------------------------------------------------
find_python() {
  # A real interpreter, never a pyenv shim: uv cannot inspect shims of inactive versions.
  local root
  if command -v pyenv >/dev/null 2>&1 && root=$(pyenv root 2>/dev/null); then
    for p in "$root"/versions/3.12*/bin/python3.12; do [ -x "$p" ] && { echo "$p"; return; }; done
  fi
  if p=$(uv python find 3.12 2>/dev/null); then echo "$p"; return; fi
  python3 -c 'import sys; assert sys.version_info >= (3, 11); print(sys.executable)' 2>/dev/null \
    || uv python find '>=3.11' 2>/dev/null
}
# kit's own dependencies are pinned too: uv.lock at the top level, installed as locked.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  [ -n "$PYTHON" ] || PYTHON=$(find_python) || true
  [ -n "$PYTHON" ] || die "no Python >= 3.11 found; install one (e.g. 'uv python install 3.12')"
  say "creating kit's environment in .venv with $PYTHON"
  rm -rf .venv   # a half-built environment is rebuilt, never used
  uv venv --quiet --python "$PYTHON" .venv
fi
say "installing kit's locked dependencies into .venv (uv sync --frozen)"
uv sync --quiet --frozen --extra test --extra dev --python .venv/bin/python
# kit's own modules compiled too (uv compiles what it installs, not this editable checkout): a
# command starts without compiling them first, even where PYTHONDONTWRITEBYTECODE is set
.venv/bin/python -m compileall -q kit >/dev/null

# before the long steps: what they will build and download, and about how long it takes
# (their lock files' sizes at a rate measured here); an estimate that cannot be made is said,
# and never stops the setup
STACK_LIST=""   # the stacks named with --stacks (none: every one available here)
[ "$STACKS" = all ] || [ "$STACKS" = none ] || STACK_LIST="${STACKS//,/ }"
if [ "$STACKS" != none ]; then
  say "estimate: the stacks to build"
  # shellcheck disable=SC2086 (a list of names, split on purpose, as `kit stacks build` takes)
  .venv/bin/kit stacks build --estimate $STACK_LIST \
    || echo "bootstrap: no estimate of the stacks (above); building them all the same" >&2
else
  say "estimate: no stacks to build (--stacks none)"
fi
if [ "$AUDIT" = 1 ]; then
  echo "then the smoke audit: the null experiment and 4 seeds on $N proteins$([ "$STACKS" = none ] \
    || printf ',\n  and each cross-stack factor on its pairs of stacks built here'); a bar shows its runs"
fi

# 3. stacks --------------------------------------------------------------------------------
STACKS_FAILED=0
if [ "$STACKS" != none ]; then
  if [ "$STACKS" = all ]; then
    say "building the stacks available on this platform (resumable; skips built ones)"
    # the default: kit works without any of them, so a stack that fails to build (a download
    # cut off) is said and the setup goes on; stacks named with --stacks are what was asked
    .venv/bin/kit stacks build || STACKS_FAILED=1
  else
    say "building stacks: $STACKS"
    # shellcheck disable=SC2086
    .venv/bin/kit stacks build $STACK_LIST
  fi
  .venv/bin/kit stacks
  if [ "$STACKS_FAILED" = 1 ]; then
    echo "bootstrap: not every stack was built (the error above); kit works without them and" \
         "the smoke audit leaves their factors out; \`.venv/bin/kit stacks build\` tries again" >&2
  fi
fi

# 3b. container images of the stacks built (--containers) ------------------------------------
IMAGED=""   # the stack whose images the smoke audit's container and os factors run in
if [ "$CONTAINERS" = 1 ]; then
  # the pipeline stacks built here, in catalogue order (named with --stacks: those)
  BUILT=$(.venv/bin/python -c 'import json, sys
rows = json.load(sys.stdin)
print(" ".join(r["name"] for r in rows if r["kind"] == "catalogue" and r["uses"] == ["pipeline"]
               and r["status"] == "built"))' < <(.venv/bin/kit stacks --json))
  [ -n "$STACK_LIST" ] && BUILT="$STACK_LIST"
  if [ -z "$BUILT" ]; then
    echo "bootstrap: --containers: no pipeline stack is built, so no image is either" >&2
  else
    IMAGED="${BUILT%% *}"
    say "building container images: $BUILT (docs/containers.md)"
    # shellcheck disable=SC2086
    if .venv/bin/kit stacks build --container $BUILT \
        && .venv/bin/kit stacks build --container --base trixie "$IMAGED"; then
      .venv/bin/kit stacks
    else
      echo "bootstrap: the images were not all built (the line above); kit works without" \
           "them, and the smoke audit leaves the container factors out" >&2
      IMAGED=""
    fi
  fi
fi

# 4. dataset -------------------------------------------------------------------------------
# Offline is expected: `--offline-ok` says so as information (exit 75); any other failure of the
# fetch (a short or changed answer) was printed as the error it is, and falls back the same way.
DATASET=synthetic
FETCHED=75  # not asked: as if offline
if [ "$FETCH" = 1 ]; then FETCHED=0; .venv/bin/kit data fetch --offline-ok || FETCHED=$?; fi
if [ "$FETCHED" = 0 ]; then
  DATASET=swissprot
elif .venv/bin/kit data verify swissprot >/dev/null 2>&1; then
  DATASET=swissprot
  say "dataset: using the cached Swiss-Prot subset"
elif [ "$FETCH" = 0 ]; then
  say "dataset: not fetched (--no-fetch); using the built-in SYNTHETIC set"
elif [ "$FETCHED" = 75 ]; then
  say "dataset: UniProt not reached; using the built-in SYNTHETIC set instead"
else
  say "dataset: the fetch failed (above); using the built-in SYNTHETIC set instead"
fi

# 5. smoke audit ---------------------------------------------------------------------------
if [ "$AUDIT" = 1 ]; then
  say "smoke audit: null experiment and 4 seeds on $N proteins of $DATASET"
  .venv/bin/kit run --factor repeat --dataset "$DATASET" --n "$N" --threads 1 --yes >/dev/null
  .venv/bin/kit run --factor seed --dataset "$DATASET" --n "$N" --threads 1 --seeds 0-3 --yes >/dev/null
  # the cross-stack factors of the stacks built here, whatever --stacks named: each runs the
  # pairs whose two stacks are built (--built builds nothing); what could not run is said below
  for f in $(.venv/bin/kit stacks factors); do
    case "$f" in container|os) [ -n "$IMAGED" ] && continue ;; esac  # run below, on $IMAGED
    say "smoke audit: factor $f"
    .venv/bin/kit run --factor "$f" --built --dataset "$DATASET" --n "$N" --threads 1 --yes >/dev/null
  done
  NOT_RUN=$(.venv/bin/python -c 'import json, sys
for r in json.load(sys.stdin):
    name, pairs = r["factor"], r.get("pairs") or []
    left = [p for p in pairs if p["not_built"]]
    if name in ("container", "os") and sys.argv[1]:
        continue  # run on the imaged stack
    if not r["available"]:
        print(f"  {name}: not on this machine: " + r["reason"])
    elif left:
        need = ", ".join(sorted({n for p in left for n in p["not_built"]}))
        some = "all of its" if len(left) == len(pairs) else f"{len(left)} of its {len(pairs)}"
        print(f"  {name}: {some} pairs left out, stacks not built: {need}")' "$IMAGED" \
    < <(.venv/bin/kit stacks factors --json)) || NOT_RUN=""
  if [ -n "$NOT_RUN" ]; then
    say "smoke audit: cross-stack factors (or pairs) not run, and why"
    echo "$NOT_RUN"
    echo "  (.venv/bin/kit stacks build NAME builds a stack; then kit run --factor FACTOR)"
  fi
  if [ -n "$IMAGED" ]; then
    say "smoke audit: factors container and os (stack $IMAGED)"
    .venv/bin/kit run --factor container,os --stack "$IMAGED" --dataset "$DATASET" --n "$N" \
      --threads 1 --yes >/dev/null
  fi
  .venv/bin/kit budget --dataset "$DATASET" --n "$N"
  cat <<'EOF'

How to read it: each row is a factor kit changed with everything else held;
repeat (the same run twice) should be identical, and the figures in seed units
("seed u." and the brackets) compare each factor with a new random seed (1 =
as much), so a factor well below 1 matters less than your seed, and one near 1
or above is worth pinning (`kit advise` says which first).
EOF
fi
[ "$LINK" = 1 ] && link_kit
if [ "$STACKS_FAILED" = 1 ]; then
  say "done, without every stack (above). Next: $KIT_CMD tui   or   $KIT_CMD run --factor threads   (see README.md)"
else
  say "done. Next: $KIT_CMD tui   or   $KIT_CMD run --factor threads   (see README.md)"
fi
