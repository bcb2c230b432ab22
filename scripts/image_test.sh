#!/usr/bin/env bash
# The image test, on a real Docker engine: builds docker/Dockerfile from a
# fresh clone of this repository's HEAD with the unit tests inside the build
# (RUN_TESTS=1), then checks the image as it is deployed and prints the
# figures (build time, image size, drain time, farm summary):
#
#   size       the image is at most MAX_IMAGE_MB (150) MB
#   user, fs   quantd runs as UID 10001 with a read-only root filesystem
#              (--read-only --tmpfs /tmp --cap-drop ALL no-new-privileges)
#   health     `quantctl health` from inside answers SERVING, and Docker's
#              HEALTHCHECK turns the container healthy
#   job        a job through the server (ppocr_det, imx500@4.1) gives the
#              QDQ bytes of an in-process run (quantctl in the image, and
#              the host's quantctl when there is one)
#   drain      SIGTERM during a job: the job finishes with the same bytes and
#              the container exits 0 within QUANTD_DRAIN_SECONDS
#   farm       docker/compose.yaml with 3 replicas and the farm runner on the
#              example manifest plus 30 jobs of real models; one replica is
#              killed (docker kill) while it runs a job; every job lands
#              exactly once (summary.json) with the bytes of an in-process run
#
# Not in .ci/run: the image build alone takes about half an hour on 2 cores,
# more than CI's run can spare. Run it by hand on a machine with a Docker
# engine (docker/README.md keeps its latest figures).
#
# Usage: scripts/image_test.sh [--image TAG] [--no-build] [--skip-farm]
#                              [--quantctl BIN] [--make-example BIN]
#   --image TAG         image to build and test (default: quantd:dev)
#   --no-build          test TAG as it is (no clone, no build)
#   --skip-farm         leave out the compose farm
#   --quantctl BIN      host quantctl for one more in-process comparison
#                       (default: build/clients/quantctl/quantctl if built;
#                       '' skips it)
#   --make-example BIN  make_ptq_example for the example manifest's inputs
#                       (default: build/bench/ptq/make_ptq_example if built;
#                       without it the farm runs the 30 real-model jobs only)
#   QUANTD_CACHE_DIR    the real models and samples (default: .cache;
#                       scripts/fetch_models.sh fills it)
#   CPU_SHARES          docker build --cpu-shares (default: 256, low priority)
#   JOBS                build and test jobs in the image (default: all CPUs)
#   KEEP_WORK=1         keep the work folder (it is kept when a check fails)
#
# Needs the docker client and engine (base images: scripts/docker_base_images.sh
# makes debian:bookworm and -slim when they are missing), `docker compose` or
# docker-compose 1.29, git and python3. Everything it starts carries the label
# quantd-image-test=<its pid> and is removed on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
image=quantd:dev
build=1
farm=1
quantctl=$ROOT/build/clients/quantctl/quantctl
make_example=$ROOT/build/bench/ptq/make_ptq_example
while (($#)); do
  case "$1" in
    --image)
      image=$2
      shift 2
      ;;
    --no-build)
      build=0
      shift
      ;;
    --skip-farm)
      farm=0
      shift
      ;;
    --quantctl)
      quantctl=$2
      shift 2
      ;;
    --make-example)
      make_example=$2
      shift 2
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "image_test: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
done

readonly MAX_IMAGE_MB=150
readonly UID_IN_IMAGE=10001
readonly REPLICAS=3
readonly TPC=imx500@4.1
cache=${QUANTD_CACHE_DIR:-$ROOT/.cache}
cpu_shares=${CPU_SHARES:-256}
label="quantd-image-test=$$"
project="quantdimagetest$$"
user="$(id -u):$(id -g)"
results=()

log() { printf 'image_test: %s\n' "$*" >&2; }
fail() {
  log "FAIL: $*"
  exit 1
}
result() {
  results+=("$1|$2")
  log "$1: $2"
}
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

for tool in docker git python3; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed"
done
docker info >/dev/null 2>&1 || fail "no Docker engine answers (start dockerd)"
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
elif ((farm)); then
  fail "neither 'docker compose' nor docker-compose is installed (or --skip-farm)"
fi
for model in ppocr_det ppocr_rec ppocr_cls; do
  [[ -f $cache/models/$model.onnx && -d $cache/samples/$model/calib ]] ||
    fail "no $model in $cache (run scripts/fetch_models.sh)"
done
[[ -x $quantctl ]] || quantctl=""
[[ -x $make_example ]] || make_example=""

work=$(mktemp -d "${TMPDIR:-/tmp}/quantd-image-test.XXXXXX")
chmod 755 "$work"
cleanup() {
  local rc=$?
  if ((farm)) && [[ -n ${compose_file:-} ]]; then
    "${compose[@]}" -p "$project" -f "$compose_file" down --timeout 0 \
      >/dev/null 2>&1 || true
  fi
  local ids
  # Its own containers, and the compose project's (`run` ones included).
  mapfile -t ids < <(docker ps -aq --filter "label=$label"
    docker ps -aq --filter "label=com.docker.compose.project=$project")
  ((${#ids[@]} == 0)) || docker rm -f "${ids[@]}" >/dev/null 2>&1 || true
  if ((rc == 0)) && [[ ${KEEP_WORK:-0} != 1 ]]; then
    rm -rf "$work"
  else
    log "work folder kept: $work"
  fi
}
trap cleanup EXIT

# --- build -----------------------------------------------------------------
src=$ROOT
if ((build)); then
  for base in debian:bookworm debian:bookworm-slim; do
    docker image inspect "$base" >/dev/null 2>&1 ||
      "$ROOT/scripts/docker_base_images.sh"
  done
  src=$work/src
  git clone -q "$ROOT" "$src"
  revision=$(git -C "$src" rev-parse HEAD)
  log "building $image from a clone of $revision (RUN_TESTS=1; log: $work/build.log)"
  start=$(now)
  if ! (cd "$src" && DOCKER_BUILDKIT=0 nice -n 10 docker build --network host \
    --cpu-shares "$cpu_shares" -f docker/Dockerfile --build-arg RUN_TESTS=1 \
    --build-arg JOBS="${JOBS:-}" --build-arg REVISION="$revision" \
    -t "$image" .) >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log" >&2
    fail "docker build failed"
  fi
  result "build (RUN_TESTS=1, fresh clone)" "$(seconds_since "$start") s"
  unit=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$work/build.log" | tail -n1)
  [[ -n $unit ]] || fail "no ctest summary in the build log"
  result "unit tests in the build" "$unit"
fi
docker image inspect "$image" >/dev/null 2>&1 || fail "no image $image"
bytes=$(docker image inspect -f '{{.Size}}' "$image")
result "image size" "$(awk -v b="$bytes" 'BEGIN { printf "%.1f MB (%.1f MiB)", b / 1e6, b / 1048576 }')"
((bytes <= MAX_IMAGE_MB * 1000000)) || fail "image larger than $MAX_IMAGE_MB MB"
drain_seconds=$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$image" |
  sed -n 's/^QUANTD_DRAIN_SECONDS=//p')
[[ -n $drain_seconds ]] || fail "the image sets no QUANTD_DRAIN_SECONDS"

# --- helpers ---------------------------------------------------------------
# A server as deployed: read-only root, /tmp in memory, no capabilities.
start_server() {
  local name=$1
  shift
  docker run -d --name "$name" --label "$label" --read-only --tmpfs /tmp \
    --cap-drop ALL --security-opt no-new-privileges:true "$@" "$image" >/dev/null
}
# quantctl from the image, as the caller; ARGS after the docker options.
quantctl_in_image() {
  local network=$1
  shift
  docker run --rm --label "$label" --network "$network" --user "$user" \
    --read-only --tmpfs /tmp -v "$cache:/cache:ro" -v "$work:/work" \
    --entrypoint /usr/local/bin/quantctl "$image" "$@"
}
wait_serving() {
  local name=$1 deadline=$((SECONDS + 90))
  until docker exec "$name" /usr/local/bin/quantctl health \
    --server 127.0.0.1:50051 >"$work/$name.health" 2>&1; do
    ((SECONDS < deadline)) || {
      docker logs "$name" >&2
      fail "$name never answered quantctl health"
    }
    sleep 1
  done
}
wait_healthy() {
  local name=$1 deadline=$((SECONDS + 120)) status
  while status=$(docker inspect -f '{{.State.Health.Status}}' "$name") &&
    [[ $status != healthy ]]; do
    ((SECONDS < deadline)) || fail "$name: Docker health is '$status'"
    sleep 1
  done
}
job_args=(quantize /cache/models/ppocr_det.onnx --tpc "$TPC"
  --calib /cache/samples/ppocr_det/calib --quiet)

# --- one container: user, read-only root, health, a job --------------------
server=$project-server
start_server "$server" -e QUANTD_WORKERS=2
wait_serving "$server"
result "quantctl health inside" "$(tr -s '\n' ' ' <"$work/$server.health" | sed 's/ $//')"
uids=$(docker top "$server" -o pid,uid,comm | awk 'NR > 1 { print $2 " " $3 }')
grep -qx "$UID_IN_IMAGE quantd" <<<"$uids" || fail "quantd does not run as $UID_IN_IMAGE: $uids"
if awk -v u="$UID_IN_IMAGE" '$1 != u' <<<"$uids" | grep -q .; then
  fail "a process runs as another user: $uids"
fi
[[ $(docker inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$server") == true ]] ||
  fail "the root filesystem is not read-only"
if docker exec "$server" sh -c ': > /etc/quantd/probe' 2>/dev/null; then
  fail "the root filesystem is writable"
fi
docker exec "$server" sh -c ': > /tmp/probe' || fail "/tmp is not writable"
result "user and root filesystem" "UID $UID_IN_IMAGE (tini, quantd), read-only root, /tmp tmpfs"

start=$(now)
quantctl_in_image "container:$server" "${job_args[@]}" --out /work/served \
  --server 127.0.0.1:50051 >"$work/served.log" 2>&1 || fail "the job on the server failed: $(cat "$work/served.log")"
served_seconds=$(seconds_since "$start")
quantctl_in_image none "${job_args[@]}" --out /work/inprocess \
  >"$work/inprocess.log" 2>&1 || fail "the in-process job failed: $(cat "$work/inprocess.log")"
cmp "$work/served/model.qdq.onnx" "$work/inprocess/model.qdq.onnx" ||
  fail "served and in-process (image) QDQ bytes differ"
same="in-process in the image"
if [[ -n $quantctl ]]; then
  "$quantctl" quantize "$cache/models/ppocr_det.onnx" --tpc "$TPC" \
    --calib "$cache/samples/ppocr_det/calib" --quiet --out "$work/host" \
    >"$work/host.log" 2>&1 || fail "the host's in-process job failed: $(cat "$work/host.log")"
  cmp "$work/served/model.qdq.onnx" "$work/host/model.qdq.onnx" ||
    fail "served and host in-process QDQ bytes differ"
  same+=" and on the host ($quantctl)"
fi
result "job through the server" "ppocr_det $TPC in $served_seconds s; QDQ ($(stat -c %s "$work/served/model.qdq.onnx") bytes) equal to $same"
wait_healthy "$server"
result "Docker HEALTHCHECK" "healthy"
docker rm -f "$server" >/dev/null

# --- drain: SIGTERM during a job -------------------------------------------
server=$project-drain
start_server "$server" -e QUANTD_WORKERS=1
wait_serving "$server"
# One thread: the job runs several seconds.
quantctl_in_image "container:$server" "${job_args[@]}" --out /work/drained \
  --server 127.0.0.1:50051 --threads 1 >"$work/drain-client.log" 2>&1 &
client=$!
deadline=$((SECONDS + 60))
until docker logs "$server" 2>&1 | grep -q '"job accepted"'; do
  ((SECONDS < deadline)) || fail "the drain job never started"
  sleep 0.2
done
sleep 1
start=$(now)
docker stop --time $((drain_seconds + 10)) "$server" >/dev/null
stop_seconds=$(seconds_since "$start")
exit_code=$(docker inspect -f '{{.State.ExitCode}}' "$server")
client_rc=0
wait "$client" || client_rc=$?
docker logs "$server" >"$work/drain-server.log" 2>&1
((client_rc == 0)) || {
  cat "$work/drain-client.log" >&2
  fail "the job cut by the drain failed (quantctl exit $client_rc)"
}
cmp "$work/drained/model.qdq.onnx" "$work/served/model.qdq.onnx" ||
  fail "the drained job's QDQ bytes differ"
((exit_code == 0)) || fail "the container exited $exit_code after SIGTERM"
grep '"draining"' "$work/drain-server.log" | grep -Eq '"running": ?"?1"?' ||
  fail "quantd logged no drain with the job running: $(grep draining "$work/drain-server.log")"
finished_after=$(awk '/"draining"/ { d = 1 } d && /"job finished"/ { f = 1 } END { print f + 0 }' \
  "$work/drain-server.log")
((finished_after == 1)) || fail "the job did not finish during the drain"
awk -v s="$stop_seconds" -v d="$drain_seconds" 'BEGIN { exit !(s < d) }' ||
  fail "the drain took $stop_seconds s, QUANTD_DRAIN_SECONDS is $drain_seconds"
result "drain" "SIGTERM 1 s into a job: the job finished (same bytes), exit 0 after $stop_seconds s (QUANTD_DRAIN_SECONDS=$drain_seconds)"
docker rm -f "$server" >/dev/null

# --- the compose farm ------------------------------------------------------
if ((farm)); then
  farm_dir=$work/farm
  mkdir -p "$farm_dir/models" "$farm_dir/samples"
  : >"$farm_dir/manifest.jsonl"
  if [[ -n $make_example ]]; then
    "$make_example" "$farm_dir/example" >/dev/null
    grep -v '^#' "$src/docker/farm/manifest.jsonl" >>"$farm_dir/manifest.jsonl"
  else
    log "no make_ptq_example (--make-example): the example manifest is left out"
  fi
  # 30 jobs of real models: 8 models x 3 TPCs, and 6 with 4-bit weights.
  python3 - "$cache" "$farm_dir" >>"$farm_dir/manifest.jsonl" <<'EOF'
import json, os, shutil, sys
cache, farm = sys.argv[1:]
models = ["ppocr_det", "ppocr_rec", "ppocr_cls", "oww_embedding",
          "oww_hey_jarvis", "oww_melspectrogram", "silero_vad",
          "silero_vad_v5"]
jobs = []
for m in models:
    shutil.copy(os.path.join(cache, "models", m + ".onnx"),
                os.path.join(farm, "models"))
    shutil.copytree(os.path.join(cache, "samples", m, "calib"),
                    os.path.join(farm, "samples", m, "calib"))
    for tpc in ("imx500@4.1", "tflite@1.0", "qnnpack@1.0"):
        jobs.append((f"{m}-{tpc.replace('@', '-')}", m, tpc, {}))
for m in models[:6]:
    jobs.append((f"{m}-imx500-4.1-w4", m, "imx500@4.1", {"weights_bits": 4}))
assert len(jobs) == 30
for job_id, m, tpc, options in jobs:
    print(json.dumps({"id": job_id, "model": f"models/{m}.onnx",
                      "calib": f"samples/{m}/calib", "tpc": tpc,
                      "options": options}))
EOF
  jobs=$(grep -c . "$farm_dir/manifest.jsonl")
  chmod -R a+rX "$farm_dir"
  compose_file=$src/docker/compose.yaml
  export QUANTD_IMAGE=$image FARM_DIR=$farm_dir FARM_USER=$user \
    QUANTD_REPLICAS=$REPLICAS
  dc=("${compose[@]}" -p "$project" -f "$compose_file")
  log "farm: $jobs jobs over $REPLICAS replicas (${dc[*]})"
  "${dc[@]}" up -d --no-build --scale "quantd=$REPLICAS" quantd >"$work/compose-up.log" 2>&1 ||
    fail "compose up: $(cat "$work/compose-up.log")"
  mapfile -t replicas < <("${dc[@]}" ps -q quantd)
  ((${#replicas[@]} == REPLICAS)) || fail "${#replicas[@]} replicas, not $REPLICAS"
  for replica in "${replicas[@]}"; do
    wait_healthy "$replica"
  done
  start=$(now)
  "${dc[@]}" run -T --rm --no-deps farm >"$work/farm.log" 2>&1 &
  runner=$!
  # Kill a replica that has a job in flight once the first jobs are done.
  deadline=$((SECONDS + 600))
  killed=""
  while [[ -z $killed ]]; do
    ((SECONDS < deadline)) || fail "the farm finished no job in 10 minutes"
    kill -0 "$runner" 2>/dev/null || fail "the farm ended before a replica was killed: $(tail -n 5 "$work/farm.log")"
    done_jobs=0
    [[ ! -d $farm_dir/out ]] ||
      done_jobs=$(find "$farm_dir/out" -name result.json | wc -l)
    if ((done_jobs >= 3)); then
      for replica in "${replicas[@]}"; do
        in_flight=$(docker logs "$replica" 2>&1 | awk '/"job accepted"/ { n++ } /"job finished"/ { n-- } END { print n + 0 }')
        if ((in_flight > 0)); then
          docker kill "$replica" >/dev/null
          killed="$replica $(docker inspect -f '{{.Name}}' "$replica") ($in_flight jobs in flight, $done_jobs of $jobs done)"
          break
        fi
      done
    fi
    sleep 0.2
  done
  log "killed replica ${killed#* }"
  farm_rc=0
  wait "$runner" || farm_rc=$?
  farm_seconds=$(seconds_since "$start")
  ((farm_rc == 0)) || fail "the farm exited $farm_rc: $(tail -n 20 "$work/farm.log")"
  # Every manifest job once in summary.json, ok, with one successful attempt.
  summary=$(python3 - "$farm_dir" <<'EOF'
import json, os, sys
farm = sys.argv[1]
with open(os.path.join(farm, "manifest.jsonl")) as f:
    ids = [json.loads(l)["id"] for l in f if l.strip()]
with open(os.path.join(farm, "out", "summary.json")) as f:
    summary = json.load(f)
seen = [j["id"] for j in summary["jobs"]]
assert sorted(seen) == sorted(ids), "summary jobs differ from the manifest"
assert summary["total"] == len(ids) == summary["counts"]["ok"], summary["counts"]
for j in summary["jobs"]:
    assert j["status"] == "ok", j
    oks = [a for a in j["attempt_log"] if a["status"].lower() == "ok"]
    assert len(oks) == 1, (j["id"], j["attempt_log"])
retried = sum(1 for j in summary["jobs"] if j["attempts"] > 1)
print(f"{summary['counts']['ok']}/{summary['total']} ok, each once, "
      f"{retried} retried")
EOF
  ) || fail "summary.json does not show every job done once"
  # Jobs each replica finished (the runner sees one dns:/// target).
  spread=""
  for replica in "${replicas[@]}"; do
    n=$(docker logs "$replica" 2>&1 | grep -c '"job finished"' || true)
    spread+="${spread:+, }$n"
    [[ $killed != "$replica "* ]] || spread+=" (killed)"
  done
  # The same jobs in-process, in one container of the image.
  python3 - "$farm_dir" >"$farm_dir/inprocess.sh" <<'EOF'
import json, os, shlex, sys
farm = sys.argv[1]
print("set -e")
with open(os.path.join(farm, "manifest.jsonl")) as f:
    for line in f:
        if not line.strip():
            continue
        job = json.loads(line)
        argv = ["/usr/local/bin/quantctl", "quantize", job["model"],
                "--tpc", job["tpc"], "--calib", job["calib"],
                "--out", "inprocess/" + job["id"], "--quiet"]
        for key, value in job.get("options", {}).items():
            flag = "--" + key.replace("_", "-")
            argv += [flag] if value is True else [flag, str(value)]
        print(" ".join(shlex.quote(a) for a in argv) + " >/dev/null")
EOF
  docker run --rm --label "$label" --network none --user "$user" \
    --read-only --tmpfs /tmp -v "$farm_dir:/farm" -w /farm \
    --entrypoint /bin/sh "$image" /farm/inprocess.sh >"$work/farm-inprocess.log" 2>&1 ||
    fail "in-process farm jobs: $(tail -n 5 "$work/farm-inprocess.log")"
  references=(inprocess)
  if [[ -n $quantctl ]]; then
    # The same script with the host's quantctl.
    sed -e "s|^/usr/local/bin/quantctl |'$quantctl' |" \
      -e 's| --out inprocess/| --out host/|' "$farm_dir/inprocess.sh" >"$work/host-farm.sh"
    (cd "$farm_dir" && sh "$work/host-farm.sh") >"$work/host-farm.log" 2>&1 ||
      fail "host in-process farm jobs: $(tail -n 5 "$work/host-farm.log")"
    references+=(host)
  fi
  differ=0
  while read -r job_id; do
    for reference in "${references[@]}"; do
      cmp -s "$farm_dir/out/$job_id/model.qdq.onnx" \
        "$farm_dir/$reference/$job_id/model.qdq.onnx" || {
        log "$job_id: farm and $reference QDQ bytes differ"
        differ=$((differ + 1))
      }
    done
  done < <(python3 -c 'import json, sys; [print(json.loads(l)["id"]) for l in open(sys.argv[1]) if l.strip()]' \
    "$farm_dir/manifest.jsonl")
  ((differ == 0)) || fail "$differ farm outputs differ from in-process runs"
  result "farm" "$jobs jobs ($( [[ -n $make_example ]] && echo "example manifest + ")30 real-model jobs), $REPLICAS replicas (jobs finished: $spread), one killed with a job in flight: $summary; $jobs QDQ outputs equal to in-process (${same#in-process }); $farm_seconds s"
  "${dc[@]}" down --timeout 0 >/dev/null 2>&1
fi

# --- figures ---------------------------------------------------------------
echo
echo "image test of $image ($(docker image inspect -f '{{index .Config.Labels "org.opencontainers.image.revision"}}' "$image")), $(date -u +%F), docker $(docker version -f '{{.Server.Version}}'), $(nproc) CPUs"
for line in "${results[@]}"; do
  printf '  %-34s %s\n' "${line%%|*}" "${line#*|}"
done
