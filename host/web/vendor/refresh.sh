#!/bin/sh
# Refreshes the vendored xterm.js files (host/web/vendor/) from npm, after a version change in
# host/web/package.json. The only part of the project that needs Node.js and npm; a build
# needs neither, since the files it embeds are committed.
#
# It installs the pinned packages in a scratch folder with `npm install --ignore-scripts`
# (which verifies each tarball against the integrity hash in package-lock.json, and updates
# the lockfile when package.json changed), copies the served files and the licences here,
# and writes PINS: package, version and tarball integrity as the lockfile has them, then
# each file's SHA-256. `cargo test -p nightcrow-web` checks the committed files against PINS
# and PINS against package-lock.json.
set -eu
web=$(cd "$(dirname "$0")/.." && pwd)
vendor="$web/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$web/package.json" "$web/package-lock.json" "$work/"
(cd "$work" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
cp "$work/package-lock.json" "$web/package-lock.json"

sha256() {
    if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

pins="$vendor/PINS"
{
    echo "# package version integrity, then each vendored file and its SHA-256 (written by refresh.sh)"
    for entry in xterm:lib/xterm.mjs xterm:css/xterm.css xterm:LICENSE addon-fit:lib/addon-fit.mjs addon-fit:LICENSE; do
        name=${entry%%:*}
        file=${entry#*:}
        mkdir -p "$vendor/$name"
        cp "$work/node_modules/@xterm/$name/$file" "$vendor/$name/"
    done
    for name in xterm addon-fit; do
        node -e '
            const lock = require(process.argv[1]);
            const entry = lock.packages["node_modules/@xterm/" + process.argv[2]];
            console.log(`package @xterm/${process.argv[2]} ${entry.version} ${entry.integrity}`);
        ' "$work/package-lock.json" "$name"
        for file in "$vendor/$name"/*; do
            echo "file $name/$(basename "$file") $(sha256 "$file")"
        done
    done
} >"$pins.new"
mv "$pins.new" "$pins"
echo "vendored: $(grep -c '^file ' "$pins") files; review with git diff host/web"
