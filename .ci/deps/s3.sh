# The log's AWS backend (log/aws): its tests start a real S3-compatible
# server themselves, Versity's S3 gateway on its POSIX backend (one Go
# process on a directory), built with go install at a pinned version from
# the module proxy. It built in 2m40s on a cold module cache (2 shared
# cores), against MinIO and SeaweedFS, which have no tagged Go module
# releases and pull in far more. The tests read DOCKET_S3_SERVER and skip,
# naming this script, when it is unset and versitygw is not in PATH.
DOCKET_S3_VERSION=v1.8.0
DOCKET_S3_BIN="${DOCKET_S3_BIN:-$HOME/.cache/docket-ci/s3/$DOCKET_S3_VERSION}"
if [ ! -x "$DOCKET_S3_BIN/versitygw" ]; then
	mkdir -p "$DOCKET_S3_BIN"
	GOBIN="$DOCKET_S3_BIN" go install "github.com/versity/versitygw/cmd/versitygw@$DOCKET_S3_VERSION"
fi
DOCKET_S3_SERVER="$DOCKET_S3_BIN/versitygw"
export DOCKET_S3_SERVER
