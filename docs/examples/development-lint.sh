# The layers checked: import-linter with the contracts in pyproject.toml (its banner left out).
cd "$REPO"
echo '$ lint-imports'
lint-imports --no-cache | grep -E ' (KEPT|BROKEN)$|^Contracts: '
