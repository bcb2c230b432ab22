#!/usr/bin/env bash
# Makes the base images docker/Dockerfile starts from, debian:RELEASE (the
# build stage) and debian:RELEASE-slim (the runtime stage), available to the
# local Docker engine: an image already there is kept, one that
# `docker pull` can fetch is pulled, and otherwise (a site without an image
# registry) it is built here from Debian's packages with mmdebstrap and
# `docker import`ed under the same name.
#
# Usage: scripts/docker_base_images.sh [--release NAME] [--build] [--no-pull]
#   --release NAME  Debian release (default: bookworm, the Dockerfile's)
#   --build         build both images with mmdebstrap even if present
#   --no-pull       never try `docker pull` (air-gapped: saves its timeout)
#   MIRROR          Debian mirror (default: http://deb.debian.org/debian;
#                   security updates from MIRROR's sibling debian-security)
#
# Needs root (mmdebstrap's root mode), mmdebstrap and a Docker engine.
#
# Both images are mmdebstrap's minbase variant (Essential and
# Priority: required packages plus apt, as Debian's own images), with the
# release, its -updates and -security suites in the sources list, apt's
# lists and caches removed, and the same apt and dpkg settings Debian's
# images carry (no recommends kept as cache, no package cache). The slim one
# is trimmed as Debian's slim images are: dpkg excludes documentation (the
# copyright files stay), man and info pages, locales and lintian data, both
# for the packages of the image and for every later `apt-get install` in it.
set -euo pipefail

release=bookworm
force=0
pull=1
while (($#)); do
  case "$1" in
    --release)
      release=$2
      shift 2
      ;;
    --build)
      force=1
      shift
      ;;
    --no-pull)
      pull=0
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "docker_base_images: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
done

mirror=${MIRROR:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security
readonly PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# What Debian's slim images leave out (debuerreotype's slimify list).
SLIM_DPKG_OPTS=(
  'path-exclude=/usr/share/doc/*'
  'path-include=/usr/share/doc/*/copyright'
  'path-exclude=/usr/share/groff/*'
  'path-exclude=/usr/share/info/*'
  'path-exclude=/usr/share/linda/*'
  'path-exclude=/usr/share/lintian/overrides/*'
  'path-exclude=/usr/share/locale/*'
  'path-exclude=/usr/share/man/*'
)

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# mmdebstrap RELEASE | docker import as TAG; $2 = slim (1) or not (0).
build_image() {
  local tag=$1 slim=$2
  # The hooks run in mmdebstrap's shell, where $1 is the new root.
  # shellcheck disable=SC2016
  local args=(
    --variant=minbase
    --components=main
    # Merged /usr through directory symlinks and usr-is-merged, as
    # debootstrap and Debian's images do (otherwise apt picks usrmerge,
    # which brings perl: about 45 MB).
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --aptopt='APT::Install-Recommends "false"'
    --aptopt='Acquire::Languages "none"'
    # Debian's images: no .deb cache, no pkgcache.bin / srcpkgcache.bin.
    --aptopt='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; }'
    --aptopt='Dir::Cache::pkgcache ""'
    --aptopt='Dir::Cache::srcpkgcache ""'
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/ldconfig/aux-cache "$1"/var/log/apt/* "$1"/var/log/dpkg.log "$1"/var/log/alternatives.log'
  )
  if ((slim)); then
    local opt
    for opt in "${SLIM_DPKG_OPTS[@]}"; do
      args+=(--dpkgopt="$opt")
    done
    # The essential set is unpacked before dpkg reads these options: trim
    # what it brought too.
    # shellcheck disable=SC2016
    args+=(--customize-hook='find "$1"/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete; find "$1"/usr/share/doc -mindepth 1 -type d -empty -delete; rm -rf "$1"/usr/share/groff/* "$1"/usr/share/info/* "$1"/usr/share/linda/* "$1"/usr/share/lintian/overrides/* "$1"/usr/share/locale/* "$1"/usr/share/man/*')
  fi
  echo "docker_base_images: building $tag with mmdebstrap from $mirror" >&2
  mmdebstrap "${args[@]}" "$release" - \
    "deb $mirror $release main" \
    "deb $mirror $release-updates main" \
    "deb $security $release-security main" |
    docker import --change "ENV $PATH_ENV" --change 'CMD ["bash"]' \
      --message "mmdebstrap --variant=minbase $release$( ((slim)) && echo ' (slim)')" \
      - "$tag" >/dev/null
}

command -v docker >/dev/null || {
  echo "docker_base_images: no docker client on PATH" >&2
  exit 1
}
for tag in "debian:$release" "debian:$release-slim"; do
  slim=0
  [[ $tag == *-slim ]] && slim=1
  if ((!force)) && have_image "$tag"; then
    echo "docker_base_images: $tag is present"
    continue
  fi
  if ((!force && pull)) && docker pull -q "$tag" >/dev/null 2>&1; then
    echo "docker_base_images: pulled $tag"
    continue
  fi
  command -v mmdebstrap >/dev/null || {
    echo "docker_base_images: $tag cannot be pulled and mmdebstrap is missing (apt-get install mmdebstrap)" >&2
    exit 1
  }
  [[ $(id -u) -eq 0 ]] || {
    echo "docker_base_images: building $tag needs root (mmdebstrap's root mode)" >&2
    exit 1
  }
  build_image "$tag" "$slim"
  echo "docker_base_images: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1 / 1e6}'))"
done
