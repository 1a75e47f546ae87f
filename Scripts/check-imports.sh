#!/usr/bin/env bash
# The layering rule (Docs/Architecture.md): each target imports only the targets below it —
# those its Package.swift declaration depends on, directly or through them. SwiftPM lets a file
# import any module already built, declared or not; this check does not.
#
# Reads every target of Package.swift (name, dependencies, path), then every `import` of every
# Swift file of each target; an import of another target of this package that is not among the
# importing target's (transitive) dependencies is reported as file:line. Exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A deps path kind
names=()
# One declaration per match: `.target(name: "X", dependencies: ["A", "B"], path: "…")`, over
# Package.swift joined into one line (declarations may span lines).
while IFS= read -r declaration; do
    name=$(sed -E 's/.*name: "([A-Za-z0-9_]+)".*/\1/' <<< "$declaration")
    names+=("$name")
    kind[$name]=$(sed -E 's/^\.([A-Za-z]+)\(.*/\1/' <<< "$declaration")
    deps[$name]=""
    if [[ "$declaration" == *"dependencies: ["* ]]; then
        deps[$name]=$(sed -E 's/.*dependencies: \[([^]]*)\].*/\1/; s/[",]/ /g; s/ +/ /g; s/ $//' <<< "$declaration")
    fi
    if [[ "$declaration" == *'path: "'* ]]; then
        path[$name]=$(sed -E 's/.*path: "([^"]*)".*/\1/' <<< "$declaration")
    elif [[ "${kind[$name]}" == "testTarget" ]]; then
        path[$name]="Tests/$name"
    else
        path[$name]="Sources/$name"
    fi
done < <(tr '\n' ' ' < Package.swift | grep -oE '\.(target|testTarget|executableTarget|systemLibrary)\(name: "[A-Za-z0-9_]+"[^)]*\)')

if [[ ${#names[@]} -lt 8 ]]; then
    echo "check-imports: read only ${#names[@]} targets from Package.swift: ${names[*]}" >&2
    exit 1
fi

# The targets below `$1`: its dependencies, theirs, and so on.
below() {
    local -A seen=()
    local stack=(${deps[$1]}) target
    while [[ ${#stack[@]} -gt 0 ]]; do
        target=${stack[-1]}
        unset 'stack[-1]'
        [[ -n "${seen[$target]:-}" ]] && continue
        seen[$target]=1
        stack+=(${deps[$target]:-})
    done
    echo "${!seen[@]}"
}

status=0
for name in "${names[@]}"; do
    [[ -d "${path[$name]}" ]] || continue
    allowed=" $(below "$name") "
    while IFS= read -r hit; do
        [[ -z "$hit" ]] && continue
        file=${hit%%:*}
        rest=${hit#*:}
        line=${rest%%:*}
        module=$(sed -E 's/.*import[[:space:]]+([A-Za-z0-9_]+).*/\1/' <<< "${rest#*:}")
        [[ -z "${kind[$module]:-}" || "$module" == "$name" ]] && continue  # not a target of this package
        if [[ "$allowed" != *" $module "* ]]; then
            echo "$file:$line: $name imports $module, which is not below it (its dependencies:${deps[$name]:- none})"
            status=1
        fi
    done < <(grep -rnE --include='*.swift' '^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*import[[:space:]]+[A-Za-z0-9_]+' "${path[$name]}" || true)
done

if [[ $status -eq 0 ]]; then echo "check-imports: every target of Package.swift imports only the targets below it"; fi
exit $status
