# Sourced by the setup scripts that build a Go program (build-seaweedfs.sh,
# install-pythons.sh): `go_bin NEED` prints a Go at least NEED: the machine's, else
# the Go toolchain module golang.org/toolchain from the Go module proxy, kept under
# $VENV/go (Debian's golang is older than SeaweedFS needs).
GO_FETCHED=1.26.6
GO_PROXY_URL=${GOPROXY_URL:-https://proxy.golang.org}

version_at_least() {  # version_at_least HAVE NEED
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]
}

go_bin() {  # go_bin NEED
    local go
    for go in "$(command -v go || true)" /usr/local/go/bin/go "$VENV/go/bin/go"; do
        [ -n "$go" ] && [ -x "$go" ] || continue
        local have
        have=$("$go" env GOVERSION 2>/dev/null | sed 's/^go//')
        if [ -n "$have" ] && version_at_least "$have" "$1"; then
            echo "$go"
            return
        fi
    done
    local zip=$VENV/go-toolchain.zip
    local mod="golang.org/toolchain/@v/v0.0.1-go$GO_FETCHED.linux-$(dpkg --print-architecture).zip"
    echo "go-toolchain: fetching Go $GO_FETCHED ($GO_PROXY_URL/$mod)" >&2
    curl -fsSL -o "$zip" "$GO_PROXY_URL/$mod"
    rm -rf "$VENV/go" "$VENV/go-unpacked"
    "$VENV/bin/python" -m zipfile -e "$zip" "$VENV/go-unpacked"
    mv "$VENV/go-unpacked/golang.org/toolchain@v0.0.1-go$GO_FETCHED.linux-"* "$VENV/go"
    rm -rf "$VENV/go-unpacked" "$zip"
    chmod +x "$VENV"/go/bin/* "$VENV"/go/pkg/tool/*/*
    echo "$VENV/go/bin/go"
}
