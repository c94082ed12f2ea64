#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft: broker and controller in one process) on 127.0.0.1, for trying
# FlameSpark's Kafka sources and sinks and for its tests. Kafka's jars come from Maven Central, fetched once
# (scripts/kafka-broker.pom.xml) into ${FLAMESPARK_CACHE:-~/.cache/flamespark}/kafka-<version>/.
#
#   scripts/kafka-broker.sh fetch          fetch the jars (nothing else)
#   scripts/kafka-broker.sh start [PORT]   start a broker on 127.0.0.1:PORT (default 9092); returns once it
#                                          accepts connections
#   scripts/kafka-broker.sh stop [PORT]    stop it (its topics are kept for the next start)
#   scripts/kafka-broker.sh clean [PORT]   stop it and delete its topics
#
# A broker's files (configuration, data, broker.log, pid) live in $KAFKA_BROKER_DIR, by default
# ${TMPDIR:-/tmp}/flamespark-kafka-PORT. KAFKA_START_TIMEOUT (seconds, default 60) bounds the wait at start.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
POM="$HERE/kafka-broker.pom.xml"
VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")
CACHE="${FLAMESPARK_CACHE:-$HOME/.cache/flamespark}/kafka-$VERSION"
LIBS="$CACHE/libs"

die() { echo "kafka-broker: $*" >&2; exit 1; }

fetch() {
    [ -f "$CACHE/complete" ] && return 0
    command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Kafka $VERSION from Maven Central"
    echo "kafka-broker: fetching Apache Kafka $VERSION from Maven Central into $CACHE" >&2
    rm -rf "$LIBS"
    mkdir -p "$CACHE"
    mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$LIBS" >&2 \
        || die "could not fetch Kafka $VERSION (see Maven's output above)"
    touch "$CACHE/complete"  # a fetch cut short is redone
}

port_of() {
    local port=${1:-9092}
    [[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "not a port: $port"
    echo "$port"
}

broker_dir() { echo "${KAFKA_BROKER_DIR:-${TMPDIR:-/tmp}/flamespark-kafka-$1}"; }

accepts() {  # whether 127.0.0.1:$1 accepts a TCP connection
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running_pid() {  # the broker's pid if it runs
    local pid_file="$1/pid"
    [ -f "$pid_file" ] || return 1
    local pid
    pid=$(cat "$pid_file")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

configure() {  # write $dir/server.properties for a broker on $port
    local dir=$1 port=$2 controller
    # The controller's port is kept with the data: the quorum's metadata records its endpoint.
    [ -f "$dir/controller-port" ] || free_port >"$dir/controller-port"
    controller=$(cat "$dir/controller-port")
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=false
# One node: every internal topic has one replica, and few partitions, which are made at first use.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    cat >"$dir/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
EOF
}

start() {
    local port dir pid
    port=$(port_of "${1:-}")
    dir=$(broker_dir "$port")
    fetch
    command -v java >/dev/null || die "Java 17 or later is needed to run Kafka"
    if pid=$(running_pid "$dir"); then
        die "a broker started from $dir runs already (pid $pid); stop it first: $0 stop $port"
    fi
    accepts "$port" && die "127.0.0.1:$port is in use by another process: give another port"
    mkdir -p "$dir"
    local java=(java -Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
                -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$LIBS/*")
    configure "$dir" "$port"
    if [ ! -f "$dir/data/meta.properties" ]; then
        local cluster
        cluster=$("${java[@]}" kafka.tools.StorageTool random-uuid)
        "${java[@]}" kafka.tools.StorageTool format --standalone --cluster-id "$cluster" \
            --config "$dir/server.properties" >"$dir/format.log" 2>&1 \
            || die "formatting the storage in $dir/data failed: $(tail -n 5 "$dir/format.log")"
    fi
    nohup "${java[@]}" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/pid"
    local deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-60}))
    until accepts "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$dir/pid"
            die "the broker exited while starting; the end of its log ($dir/broker.log):
$(tail -n 20 "$dir/broker.log" "$dir/stdout.log" 2>/dev/null)"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            kill "$pid" 2>/dev/null || true
            rm -f "$dir/pid"
            die "the broker did not accept connections on 127.0.0.1:$port within ${KAFKA_START_TIMEOUT:-60} s; the end of its log ($dir/broker.log):
$(tail -n 20 "$dir/broker.log" 2>/dev/null)"
        fi
        sleep 0.2
    done
    echo "kafka-broker: Apache Kafka $VERSION on 127.0.0.1:$port (pid $pid, files in $dir)" >&2
}

stop() {
    local port dir pid
    port=$(port_of "${1:-}")
    dir=$(broker_dir "$port")
    if ! pid=$(running_pid "$dir"); then
        rm -f "$dir/pid"
        return 0
    fi
    kill "$pid"
    # A clean shutdown takes a few seconds; past 30 s the broker is killed (its logs recover at the next start).
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
}

clean() {
    local port
    port=$(port_of "${1:-}")
    stop "$port"
    rm -rf "$(broker_dir "$port")"
}

case "${1:-}" in
    fetch) fetch ;;
    start) start "${2:-}" ;;
    stop) stop "${2:-}" ;;
    clean) clean "${2:-}" ;;
    *) echo "usage: $0 fetch | start [PORT] | stop [PORT] | clean [PORT]" >&2; exit 2 ;;
esac
