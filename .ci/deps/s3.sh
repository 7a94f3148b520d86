# The log's AWS backend (log/aws): its tests start a real S3-compatible
# server themselves, Versity's S3 gateway on its POSIX backend (one Go
# process on a directory), built with go install at a pinned version from
# the module proxy: v1.8.0 requires 81 modules and built in 2m38s with its
# modules downloaded (2 shared cores). MinIO and SeaweedFS have no tagged
# Go module releases (pseudo-versions only) and require 259 and 494
# modules. The binary is cached in ~/.cache/docket-ci/s3. The tests read
# DOCKET_S3_SERVER and skip, naming this script, when it is unset and
# versitygw is neither in PATH nor in $GOPATH/bin.
DOCKET_S3_VERSION=v1.8.0
DOCKET_S3_BIN="${DOCKET_S3_BIN:-$HOME/.cache/docket-ci/s3/$DOCKET_S3_VERSION}"
if [ ! -x "$DOCKET_S3_BIN/versitygw" ]; then
	mkdir -p "$DOCKET_S3_BIN"
	GOBIN="$DOCKET_S3_BIN" go install "github.com/versity/versitygw/cmd/versitygw@$DOCKET_S3_VERSION"
fi
DOCKET_S3_SERVER="$DOCKET_S3_BIN/versitygw"
export DOCKET_S3_SERVER
