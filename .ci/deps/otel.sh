# The OpenTelemetry export (package telemetry): its tests start a real OTLP
# receiver themselves, the OpenTelemetry Collector with only the OTLP
# receiver and the file exporter, so that a test reads back exactly the
# spans the collector received. Built from the module proxy at a pinned
# version. The collector's own distributions (otelcorecol, otelcontribcol)
# are no published modules, and Jaeger's go.mod has a replace directive,
# which `go install pkg@version` refuses; so the collector's builder (ocb),
# installed with go install, writes a main module for the manifest below,
# and go builds it. (Not the builder's own `go mod tidy`: it wants the file
# exporter's test dependencies, which the module proxy here refuses; go get
# resolves what the build imports.) Cold build, modules not downloaded:
# 14m48s wall at load average 17 on the shared 2-core machine, 3m46s user
# CPU (go install of the builder: 34s); with the modules downloaded, 1m20s.
# The binary is cached in
# ~/.cache/docket-ci/otel. The tests read DOCKET_OTELCOL and skip, naming
# this script, when it is unset.
DOCKET_OTEL_VERSION=v0.165.0
DOCKET_OTEL_STABLE=v1.71.0 # the collector's stable modules of that release
DOCKET_OTEL_DIR="${DOCKET_OTEL_DIR:-$HOME/.cache/docket-ci/otel/$DOCKET_OTEL_VERSION}"
if [ ! -x "$DOCKET_OTEL_DIR/docket-otelcol" ]; then
	rm -rf "$DOCKET_OTEL_DIR/build"
	mkdir -p "$DOCKET_OTEL_DIR/build"
	GOBIN="$DOCKET_OTEL_DIR/build" go install "go.opentelemetry.io/collector/cmd/builder@$DOCKET_OTEL_VERSION"
	cat >"$DOCKET_OTEL_DIR/build/manifest.yaml" <<MANIFEST
dist:
  name: docket-otelcol
  description: OTLP receiver and file exporter for Docket's tests
  output_path: $DOCKET_OTEL_DIR/build/src
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver $DOCKET_OTEL_VERSION
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter $DOCKET_OTEL_VERSION
MANIFEST
	"$DOCKET_OTEL_DIR/build/builder" --config "$DOCKET_OTEL_DIR/build/manifest.yaml" \
		--skip-get-modules --skip-compilation >"$DOCKET_OTEL_DIR/build/builder.log" 2>&1 ||
		{ cat "$DOCKET_OTEL_DIR/build/builder.log" >&2; false; }
	(
		cd "$DOCKET_OTEL_DIR/build/src" &&
			go mod init docket-otelcol &&
			go get "go.opentelemetry.io/collector/receiver/otlpreceiver@$DOCKET_OTEL_VERSION" \
				"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@$DOCKET_OTEL_VERSION" \
				"go.opentelemetry.io/collector/otelcol@$DOCKET_OTEL_VERSION" \
				"go.opentelemetry.io/collector/service@$DOCKET_OTEL_VERSION" \
				"go.opentelemetry.io/collector/confmap@$DOCKET_OTEL_STABLE" &&
			go get ./... &&
			GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o ../../docket-otelcol .
	) >"$DOCKET_OTEL_DIR/build/go.log" 2>&1 || { cat "$DOCKET_OTEL_DIR/build/go.log" >&2; false; }
	rm -rf "$DOCKET_OTEL_DIR/build"
fi
DOCKET_OTELCOL="$DOCKET_OTEL_DIR/docket-otelcol"
export DOCKET_OTELCOL
