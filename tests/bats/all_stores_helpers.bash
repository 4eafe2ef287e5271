# shellcheck shell=bash
# Every remote store at once (an http store with its -r Redis, and an S3
# server) beside the file store, for the suites that run one behaviour on
# each store. Loading this file gives the suite its fixture:
#
#   load all_stores_helpers   # loads http_helpers, s3_helpers, cache_helpers
#   setup() { all_stores_setup; ... }
#
# setup_file, teardown_file and teardown are defined here; setup is the
# suite's, and calls all_stores_setup first.

load http_helpers
load s3_helpers
load cache_helpers

all_stores_setup_file() {
    http_redis_setup_file || return 1
    s3_setup_file
}
all_stores_teardown_file() {
    s3_teardown_file
    http_redis_teardown_file
}
all_stores_setup() {
    http_redis_setup
    s3_setup
}

setup_file() { all_stores_setup_file; }
teardown_file() { all_stores_teardown_file; }
teardown() { http_redis_teardown; }
