#!/usr/bin/env bash
# Opens racksweep reports as a reader would: writes the reports of three example runs (one with
# sizing, three charts; the quickstart, two charts; a small training sweep, three charts),
# renders each report.html in headless Chromium, and checks that the page loads without a
# console message (the page has no script, so any message is an error: a blocked fetch, a bad
# resource), that the DOM has the charts, and that the screenshot (PNG) shows every hardware's
# colour. Then prints the sized and the training report to PDF on A4 and Letter, portrait and
# landscape, renders the pages, and checks that every table column lies inside the page
# (check_print.py), and that every table fits a browser window 800, 1,024 and 1,280 px wide
# without a horizontal scroll (check_screen.py). Run by .ci/run.
#
# Chromium is Debian's `chromium` package; installed with apt when missing and running as root,
# otherwise the check is skipped with a notice. Screenshots, PDFs and the first page of each
# PDF as PNG are kept in $1 (default: a temporary directory, removed at exit).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "render-check.sh: installing Debian's chromium" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; } >/dev/null
    chromium=$(command -v chromium || true)
fi
if [ -z "$chromium" ]; then
    echo "render-check.sh: skipped: no chromium (apt-get install chromium, as root)" >&2
    exit 0
fi

venv=${RACKSWEEP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/racksweep-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import PIL' 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pillow
# PDFium's Python bindings, to read the printed pages' text positions and render them.
"$venv/bin/python" -c 'import pypdfium2' 2>/dev/null ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check pypdfium2
py="$venv/bin/python"

cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/release/racksweep"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shots=${1:-$work/screenshots}
mkdir -p "$shots"

# Chromium's own flags for a quiet, offline, reproducible headless run.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
    --disable-background-networking --disable-component-update --disable-default-apps
    --disable-sync --metrics-recording-only --no-default-browser-check
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0)

check() { # sweep, expected charts
    local sweep=$1 charts=$2 name
    name=$(basename "$sweep" .toml)
    "$bin" run "$sweep" --quiet --out "$work/runs"
    "$bin" report "$work/runs/$name" 2>/dev/null
    local page="file://$work/runs/$name/report.html"
    timeout 120 "$chromium" "${flags[@]}" --dump-dom "$page" >"$work/$name.dom" 2>"$work/$name.log"
    timeout 120 "$chromium" "${flags[@]}" --window-size=1280,2800 \
        --screenshot="$shots/$name.png" "$page" >/dev/null 2>>"$work/$name.log"
    if grep -q ':CONSOLE' "$work/$name.log"; then
        echo "render-check.sh: error: $name/report.html logged to the console:" >&2
        grep ':CONSOLE' "$work/$name.log" >&2
        exit 1
    fi
    "$py" "$here/check_render.py" "$work/$name.dom" "$shots/$name.png" "$charts"
}

print_check() { # run name (already reported by check)
    local name=$1 page tag
    for page in "A4 portrait" "A4 landscape" "Letter portrait" "Letter landscape"; do
        tag="$name-${page// /-}"
        "$py" "$here/check_print.py" mark "$work/runs/$name/report.html" \
            "$work/runs/$name/$tag.html" "$page"
        timeout 120 "$chromium" "${flags[@]}" --no-pdf-header-footer \
            --print-to-pdf="$shots/$tag.pdf" "file://$work/runs/$name/$tag.html" \
            >/dev/null 2>>"$work/$name.log"
        "$py" "$here/check_print.py" check "$work/runs/$name/$tag.html" "$shots/$tag.pdf" "$shots"
    done
}

screen_check() { # run name (already reported by check)
    local name=$1 width
    "$py" "$here/check_screen.py" mark "$work/runs/$name/report.html" "$work/runs/$name/measured.html"
    for width in 800 1024 1280; do
        timeout 120 "$chromium" "${flags[@]}" --window-size="$width,2000" \
            --dump-dom "file://$work/runs/$name/measured.html" >"$work/$name-$width.dom" 2>>"$work/$name.log"
        "$py" "$here/check_screen.py" check "$work/$name-$width.dom" "$width"
    done
}

check sweeps/qwen3-235b-50k-users.toml 3
check sweeps/quickstart.toml 2
check tests/specs/training-small.toml 3
print_check qwen3-235b-50k-users
print_check training-small
screen_check qwen3-235b-50k-users
screen_check training-small
echo "ok: reports render in $("$chromium" --version 2>/dev/null | head -1) (screenshots in $shots)"
