#!/bin/sh
# build.sh DIR: builds the libibverbs TEST FIXTURE (not libibverbs; see
# fixture_verbs.c) into DIR, with cc:
#   DIR/libverbs_fixture.so  the fixture library, stripped like a distribution's
#                            libibverbs.so.1 (only .dynsym, no .symtab);
#   DIR/fixture_main         the program driving it (see fixture_main.c),
#                            linked with -rpath DIR.
# Exit status 2 on misuse, the failing command's otherwise.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: build.sh DIR" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
CC=${CC:-cc}

"$CC" -O2 -fPIC -shared -Wall \
	-Wl,--version-script="$src/fixture_verbs.map" \
	-Wl,-soname,libverbs_fixture.so -Wl,--strip-all \
	-o "$out/libverbs_fixture.so" "$src/fixture_verbs.c"
"$CC" -O2 -g -Wall -o "$out/fixture_main" "$src/fixture_main.c" \
	-L"$out" -lverbs_fixture -Wl,-rpath,"$out"
