#!/usr/bin/env bash
# A local Trawl cluster on loopback: a real S3-compatible server (s3s-fs), a throwaway
# PostgreSQL, and the binary in roles: 1 meta, 1 gateway, 2 ingest, 3 query, 2 janitor.
#
#   scripts/cluster.sh up [options]     # starts it, waits until every process is ready,
#                                       # writes ./cluster.env (KEY=value lines)
#   scripts/cluster.sh down [--dir DIR] # stops everything `up` started
#   scripts/cluster.sh restart NAME [--dir DIR]  # (re)starts one process: meta, gateway,
#                                       # ingest-1, query-2, janitor-1, s3, postgres, ...
#   scripts/cluster.sh start NAME [--dir DIR]    # starts one stopped process, without waiting
#   scripts/cluster.sh kill NAME [--dir DIR]     # kill -9 of one process
#
# Options of `up`:
#   --dir DIR            state: data directories, logs, pids (default ./trawl-cluster)
#   --query-nodes N      query processes (default 3)
#   --s3-endpoint URL    an existing S3-compatible service instead of s3s-fs (credentials from
#   --s3-bucket NAME     AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; the bucket must exist)
#   --s3-prefix PREFIX   prefix of the segments in the bucket (default trawl)
#   --catalog URL        an existing PostgreSQL (postgres://…) instead of a throwaway one
#   --bin PATH           the trawl binary (default: TRAWL_BIN, else `cargo build` of this checkout)
#   --merge-interval-secs N   the janitors' merge interval (default 10)
#   --query-arg ARG      one more argument of every query process (repeatable), such as
#                        --query-arg=--distribute-min-bytes=0 to spread every query
#
# cluster.env lists, among others, QUERY_URLS and QUERY_OPERATOR_URLS (the query nodes'
# query and operator addresses, in the order of PIDS_QUERY).
#
# docs/cluster.md describes the topology; deploy/kubernetes/trawl.yaml is the same cluster
# for Kubernetes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
command="${1:-}"
shift || true

dir="./trawl-cluster"
query_nodes=3
s3_endpoint=""
s3_bucket=""
s3_prefix="trawl"
catalog=""
bin="${TRAWL_BIN:-}"
merge_interval=10
query_args=()
name=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir="$2"; shift 2 ;;
        --query-nodes) query_nodes="$2"; shift 2 ;;
        --s3-endpoint) s3_endpoint="$2"; shift 2 ;;
        --s3-bucket) s3_bucket="$2"; shift 2 ;;
        --s3-prefix) s3_prefix="$2"; shift 2 ;;
        --catalog) catalog="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        --merge-interval-secs) merge_interval="$2"; shift 2 ;;
        --query-arg) query_args+=("$2"); shift 2 ;;
        --query-arg=*) query_args+=("${1#--query-arg=}"); shift ;;
        -*) echo "cluster.sh: unknown option $1" >&2; exit 2 ;;
        *) name="$1"; shift ;;
    esac
done
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

# A port nothing listens on now, and not handed out before in this run (the system can give
# the same free port to two calls in a row; the ports given are kept in $dir/.ports).
free_port() {
    local port
    for _ in $(seq 1 50); do
        port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
        if ! grep -qx "$port" "$dir/.ports" 2>/dev/null; then
            echo "$port" >>"$dir/.ports"
            echo "$port"
            return 0
        fi
    done
    die "no free port found"
}

# Starts process NAME from its launch script, recording its pid.
launch() {
    local name="$1"
    # `exec`s all the way down: the recorded pid is the process itself.
    (
        cd "$dir" || exit 1
        setsid bash "$dir/$name.launch" >>"$dir/$name.log" 2>&1 </dev/null &
        echo $! >"$dir/$name.pid"
    )
}

# Whether process PID runs (an exited process its new parent has not reaped yet is a zombie:
# it has stopped).
running() {
    local state
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
    [ -n "$state" ] && [ "$state" != "Z" ] && [ "$state" != "X" ]
}

alive() {
    local pid
    pid="$(cat "$dir/$1.pid" 2>/dev/null)" || return 1
    running "$pid"
}

stop_one() {
    local name="$1" signal="${2:-TERM}" pid
    pid="$(cat "$dir/$name.pid" 2>/dev/null)" || return 0
    kill "-$signal" "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        running "$pid" || return 0
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# Whether http://HOST:PORT/PATH answers 200 (plain bash: no HTTP client needed).
answers_200() {
    local rest="${1#http://}" hostport path status
    hostport="${rest%%/*}"
    path="/${rest#*/}"
    status="$(timeout 3 bash -c '
        exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$1" >&3
        head -n 1 <&3' _ "$hostport" "$path" 2>/dev/null)" || return 1
    [[ "$status" == *" 200 "* ]]
}

# Waits until URL answers 200, or the process died, or 90 s passed.
wait_ready() {
    local name="$1" url="$2"
    for _ in $(seq 1 900); do
        if answers_200 "$url"; then
            return 0
        fi
        if [ -f "$dir/$name.pid" ] && ! alive "$name"; then
            tail -n 30 "$dir/$name.log" >&2 || true
            die "$name exited before it was ready (log: $dir/$name.log)"
        fi
        sleep 0.1
    done
    tail -n 30 "$dir/$name.log" >&2 || true
    die "$name was not ready within 90 s (log: $dir/$name.log)"
}

# Writes the launch script of a trawl process: its environment and arguments.
trawl_launch() {
    local name="$1" with_master_key="$2"
    shift 2
    {
        echo "#!/usr/bin/env bash"
        echo "set -a"
        echo ". '$dir/cluster.secrets'"
        echo "set +a"
        if [ "$with_master_key" = "no" ]; then
            echo "unset BZRK_MASTER_KEY SECONDARY_MASTER_KEY"
        fi
        printf 'exec %q serve' "$bin"
        printf ' %q' --data-dir "$dir/$name" "$@"
        echo
    } >"$dir/$name.launch"
}

up() {
    if [ -f "$dir/cluster.state" ]; then
        die "a cluster is already up in $dir (scripts/cluster.sh down --dir $dir first)"
    fi
    rm -f "$dir/.ports"
    if [ -z "$bin" ]; then
        echo "cluster.sh: building trawl" >&2
        (cd "$repo" && cargo build --quiet --bin trawl) || die "cannot build trawl"
        bin="${CARGO_TARGET_DIR:-$repo/target}/debug/trawl"
    fi
    [ -x "$bin" ] || die "no trawl binary at $bin"
    bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

    local access_key secret_key master_key
    if [ -z "$s3_endpoint" ]; then
        local s3s port
        s3s="$(bash "$here/s3s-fs.sh")" || die "cannot install s3s-fs"
        port="$(free_port)"
        s3_endpoint="http://127.0.0.1:$port"
        s3_bucket="trawl"
        access_key="trawl-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        secret_key="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        mkdir -p "$dir/s3/$s3_bucket"
        printf '#!/usr/bin/env bash\nexec %q --host 127.0.0.1 --port %q --access-key %q --secret-key %q %q\n' \
            "$s3s" "$port" "$access_key" "$secret_key" "$dir/s3" >"$dir/s3.launch"
        launch s3
        for _ in $(seq 1 200); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.1
        done
    else
        [ -n "$s3_bucket" ] || die "--s3-endpoint needs --s3-bucket"
        access_key="${AWS_ACCESS_KEY_ID:?--s3-endpoint needs AWS_ACCESS_KEY_ID}"
        secret_key="${AWS_SECRET_ACCESS_KEY:?--s3-endpoint needs AWS_SECRET_ACCESS_KEY}"
    fi
    if [ -z "$catalog" ]; then
        local pg_dir
        pg_dir="$(mktemp -d /tmp/trawl-cluster-pg.XXXXXX)"
        chmod 755 "$pg_dir"
        echo "$pg_dir" >"$dir/postgres.dir"
        catalog="$(bash "$here/postgres.sh" start "$pg_dir")" || die "cannot start PostgreSQL"
        printf '#!/usr/bin/env bash\nexec bash %q start %q\n' "$here/postgres.sh" "$pg_dir" >"$dir/postgres.launch"
    fi
    master_key="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    umask 077
    cat >"$dir/cluster.secrets" <<SECRETS
BZRK_MASTER_KEY=$master_key
AWS_ACCESS_KEY_ID=$access_key
AWS_SECRET_ACCESS_KEY=$secret_key
AWS_REGION=${AWS_REGION:-us-east-1}
TRAWL_CATALOG=$catalog
SECRETS
    umask 022
    local store="s3://$s3_bucket/$s3_prefix"
    local shared=(--catalog "$catalog")
    local segments=(--object-store "$store" --s3-endpoint "$s3_endpoint")
    local meta_port meta_url
    meta_port="$(free_port)"
    meta_url="http://127.0.0.1:$meta_port"
    local names=() ready=()
    local pids_meta="" pids_gateway="" pids_ingest="" pids_query="" pids_janitor=""
    local otlp_http_urls="" otlp_grpc_urls="" vendor_urls="" query_urls="" operator_urls="" query_operator_urls=""

    local op
    op="$(free_port)"
    trawl_launch meta yes --role meta "${shared[@]}" --meta-bind "127.0.0.1:$meta_port" --operator-bind "127.0.0.1:$op"
    names+=(meta); ready+=("http://127.0.0.1:$op/health/ready"); operator_urls+=" meta=http://127.0.0.1:$op"
    launch meta
    wait_ready meta "http://127.0.0.1:$op/health/ready"

    local gateway_port
    gateway_port="$(free_port)"; op="$(free_port)"
    trawl_launch gateway yes --role gateway "${shared[@]}" --meta "$meta_url" \
        --gateway-bind "127.0.0.1:$gateway_port" --operator-bind "127.0.0.1:$op"
    names+=(gateway); ready+=("http://127.0.0.1:$gateway_port/health/ready"); operator_urls+=" gateway=http://127.0.0.1:$op"

    local i http grpc vendor query
    for i in 1 2; do
        http="$(free_port)"; grpc="$(free_port)"; vendor="$(free_port)"; op="$(free_port)"
        trawl_launch "ingest-$i" no --role ingest "${shared[@]}" "${segments[@]}" --meta "$meta_url" \
            --otlp-http-bind "127.0.0.1:$http" --otlp-grpc-bind "127.0.0.1:$grpc" \
            --vendor-intake --vendor-bind "127.0.0.1:$vendor" --operator-bind "127.0.0.1:$op"
        names+=("ingest-$i"); ready+=("http://127.0.0.1:$op/health/ready"); operator_urls+=" ingest-$i=http://127.0.0.1:$op"
        otlp_http_urls+=" http://127.0.0.1:$http"; otlp_grpc_urls+=" 127.0.0.1:$grpc"; vendor_urls+=" http://127.0.0.1:$vendor"
    done
    for i in $(seq 1 "$query_nodes"); do
        query="$(free_port)"; op="$(free_port)"
        trawl_launch "query-$i" yes --role query "${shared[@]}" "${segments[@]}" --meta "$meta_url" \
            --query-bind "127.0.0.1:$query" --operator-bind "127.0.0.1:$op" ${query_args[@]+"${query_args[@]}"}
        names+=("query-$i"); ready+=("http://127.0.0.1:$op/health/ready"); operator_urls+=" query-$i=http://127.0.0.1:$op"
        query_urls+=" http://127.0.0.1:$query"; query_operator_urls+=" http://127.0.0.1:$op"
    done
    for i in 1 2; do
        op="$(free_port)"
        trawl_launch "janitor-$i" yes --role janitor "${shared[@]}" "${segments[@]}" --meta "$meta_url" \
            --merge-interval-secs "$merge_interval" --operator-bind "127.0.0.1:$op"
        names+=("janitor-$i"); ready+=("http://127.0.0.1:$op/health/ready"); operator_urls+=" janitor-$i=http://127.0.0.1:$op"
    done
    for i in "${!names[@]}"; do
        [ "${names[$i]}" = "meta" ] || launch "${names[$i]}"
    done
    for i in "${!names[@]}"; do
        wait_ready "${names[$i]}" "${ready[$i]}"
        echo "${names[$i]} ${ready[$i]}" >>"$dir/cluster.state"
    done
    for name in "${names[@]}"; do
        local pid
        pid="$(cat "$dir/$name.pid")"
        case "$name" in
            meta) pids_meta+=" $pid" ;;
            gateway) pids_gateway+=" $pid" ;;
            ingest-*) pids_ingest+=" $pid" ;;
            query-*) pids_query+=" $pid" ;;
            janitor-*) pids_janitor+=" $pid" ;;
        esac
    done
    local tokens admin_token ingest_token
    tokens="$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); print(b["admin_token"], b["ingest_token"])' "$dir/meta/bootstrap.json")" \
        || die "cannot read the tokens meta made ($dir/meta/bootstrap.json)"
    read -r admin_token ingest_token <<<"$tokens"
    {
        echo "CLUSTER_DIR=$dir"
        echo "GATEWAY_URL=http://127.0.0.1:$gateway_port"
        echo "INGEST_OTLP_HTTP_URLS=\"${otlp_http_urls# }\""
        echo "INGEST_OTLP_GRPC_URLS=\"${otlp_grpc_urls# }\""
        echo "INGEST_VENDOR_URLS=\"${vendor_urls# }\""
        echo "QUERY_URLS=\"${query_urls# }\""
        echo "QUERY_OPERATOR_URLS=\"${query_operator_urls# }\""
        echo "OPERATOR_URLS=\"${operator_urls# }\""
        echo "META_URL=$meta_url"
        echo "S3_ENDPOINT=$s3_endpoint"
        echo "S3_BUCKET=$s3_bucket"
        echo "S3_PREFIX=$s3_prefix"
        echo "CATALOG_URL=$catalog"
        echo "ADMIN_TOKEN=$admin_token"
        echo "INGEST_TOKEN=$ingest_token"
        echo "PIDS_META=\"${pids_meta# }\""
        echo "PIDS_GATEWAY=\"${pids_gateway# }\""
        echo "PIDS_INGEST=\"${pids_ingest# }\""
        echo "PIDS_QUERY=\"${pids_query# }\""
        echo "PIDS_JANITOR=\"${pids_janitor# }\""
    } >cluster.env
    echo "cluster.sh: up: 1 meta, 1 gateway, 2 ingest, $query_nodes query, 2 janitor; gateway http://127.0.0.1:$gateway_port; see ./cluster.env" >&2
}

down() {
    local name
    if [ -f "$dir/cluster.state" ]; then
        # Front to back: the gateway and ingest first, meta last.
        for name in gateway $(awk '{print $1}' "$dir/cluster.state" | grep -v '^meta$\|^gateway$') meta; do
            stop_one "$name"
        done
    fi
    # Processes an `up` that failed part way started before it wrote the state.
    local pid_file
    for pid_file in "$dir"/*.pid; do
        [ -e "$pid_file" ] || continue
        name="$(basename "$pid_file" .pid)"
        [ "$name" = "s3" ] || stop_one "$name"
    done
    stop_one s3 KILL
    if [ -f "$dir/postgres.dir" ]; then
        bash "$here/postgres.sh" stop "$(cat "$dir/postgres.dir")" || true
        rm -rf "$(cat "$dir/postgres.dir")"
        rm -f "$dir/postgres.dir"
    fi
    rm -f "$dir/cluster.state" "$dir"/*.pid
    echo "cluster.sh: down" >&2
}

restart() {
    [ -n "$name" ] || die "restart needs a process name (meta, gateway, ingest-1, query-1, janitor-1, s3, postgres)"
    [ -f "$dir/$name.launch" ] || die "no process $name in $dir"
    if [ "$name" = "postgres" ]; then
        bash "$here/postgres.sh" stop "$(cat "$dir/postgres.dir")"
        bash "$dir/postgres.launch" >/dev/null
        return
    fi
    alive "$name" && stop_one "$name"
    launch "$name"
    local url
    url="$(awk -v n="$name" '$1 == n {print $2}' "$dir/cluster.state" 2>/dev/null)"
    if [ -n "$url" ]; then
        wait_ready "$name" "$url"
    fi
}

case "$command" in
    up) up ;;
    down) down ;;
    restart) restart ;;
    start) [ -f "$dir/$name.launch" ] || die "no process ${name:-(none)} in $dir"; alive "$name" || launch "$name" ;;
    kill) [ -n "$name" ] || die "kill needs a process name"; stop_one "$name" KILL ;;
    *) sed -n '2,24p' "$0" >&2; exit 2 ;;
esac
