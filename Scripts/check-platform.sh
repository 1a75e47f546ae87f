#!/usr/bin/env bash
# Portability by construction (Docs/Architecture.md, "Platforms"): fails when platform-specific
# code appears outside the I/O layer's shim, Sources/StrataIO/Platform.swift.
#
#   1. No file under Sources/ but the shim imports a platform module (Glibc, Musl, Darwin…) or
#      names one (`Glibc.open`).
#   2. No file under Sources/ but the shim calls the C library directly (pread, fsync, flock,
#      mmap, errno, pthread_…). open/close/read/write/stat/rename are not listed — Swift methods
#      share those names — but rule 1 already keeps the module that declares them out.
#   3. Under Sources/ and Tests/, FoundationEssentials is imported only as
#      `#if canImport(FoundationEssentials) import FoundationEssentials #else import Foundation
#      #endif` (FoundationEssentials is not a module of Apple SDKs; full Foundation is never
#      imported on its own).
#   4. No file under Sources/ or Tests/ but Sources/StrataIO/Lock.swift names `Mutex`: code locks
#      with StrataIO's `Lock`, which ThreadSanitizer builds make a mutex they can see.
#
# Prints every violation as file:line: text and exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

shim="Sources/StrataIO/Platform.swift"
status=0
report() { echo "$1"; status=1; }

platform_modules='Glibc|Musl|Darwin|Bionic|Android|WASILibc|WinSDK|ucrt|CRT'
libc_calls='pread|pwrite|fdatasync|fsync|fcntl|flock|mmap|munmap|ftruncate|fstat|lstat|unlink|mkdir|rmdir|opendir|readdir|closedir|getenv|setenv|sysconf|usleep|nanosleep|pthread_[a-z_]+|posix_[a-z_]+|dlopen|dlsym'

# The lines of a Swift file matching $2, searched in the code only: without // comments, string
# literals, declared names (`func unlink`, `case unlink(…)`) and labels (`errno:`). Crude, and
# enough for this check.
code_lines() {
    sed -E 's#//.*$##; s#"([^"\\]|\\.)*"#""#g; s#\b(func|case|var|let)[[:space:]]+[A-Za-z_]+##g; s#\b[A-Za-z_]+[[:space:]]*:##g' "$1" \
        | grep -nE "$2" || true
}

while IFS= read -r -d '' file; do
    [[ "$file" == "$shim" ]] && continue
    while IFS= read -r hit; do
        [[ -n "$hit" ]] && report "$file:${hit%%:*}: $(sed -n "${hit%%:*}p" "$file")  (platform module outside $shim)"
    done < <(code_lines "$file" "^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*import[[:space:]]+($platform_modules)\b|\b($platform_modules)\.[A-Za-z_]")
    while IFS= read -r hit; do
        [[ -n "$hit" ]] && report "$file:${hit%%:*}: $(sed -n "${hit%%:*}p" "$file")  (C library call outside $shim)"
    done < <(code_lines "$file" "(^|[^.[:alnum:]_])($libc_calls)[[:space:]]*\(|(^|[^.[:alnum:]_])errno\b")
done < <(find Sources -name '*.swift' -print0)

while IFS= read -r -d '' file; do
    # Rule 3: each `import FoundationEssentials` right after `#if canImport(FoundationEssentials)`,
    # each `import Foundation` right after `#else` that follows such an import.
    awk -v file="$file" '
        { line[NR] = $0; sub(/^[ \t]+/, "", line[NR]); sub(/[ \t]+$/, "", line[NR]) }
        line[NR] ~ /^(@[A-Za-z_]+ +)*import +FoundationEssentials$/ && line[NR - 1] != "#if canImport(FoundationEssentials)" {
            print file ":" NR ": import FoundationEssentials outside #if canImport(FoundationEssentials)"; bad = 1
        }
        line[NR] ~ /^(@[A-Za-z_]+ +)*import +Foundation$/ && !(line[NR - 1] == "#else" && line[NR - 2] ~ /import +FoundationEssentials$/) {
            print file ":" NR ": import Foundation other than as the #else of import FoundationEssentials"; bad = 1
        }
        END { exit bad }' "$file" || status=1
    # Rule 4.
    if [[ "$file" != Sources/StrataIO/Lock.swift ]]; then
        while IFS= read -r hit; do
            [[ -n "$hit" ]] && report "$file:${hit%%:*}: $(sed -n "${hit%%:*}p" "$file")  (lock with StrataIO's Lock, not Mutex)"
        done < <(code_lines "$file" '(^|[^A-Za-z_.])Mutex[[:space:]]*[(<]')
    fi
done < <(find Sources Tests -name '*.swift' -print0)

if [[ $status -eq 0 ]]; then echo "check-platform: platform code only in $shim"; fi
exit $status
