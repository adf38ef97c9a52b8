#!/bin/bash
# Builds (or finds in the cache) the interop guest: Debian 12's kernel with rdma_rxe as an
# uncompressed vmlinux, and a busybox initramfs with rdma-core's libraries, ibv_rc_pingpong and
# rping (librdmacm, on the kernel's rdma_cm), and libfabric's fi_pingpong (its verbs provider).
# No debootstrap and no image: the .debs are unpacked with dpkg -x and the initramfs is the
# whole guest. Prints the directory holding vmlinux and initrd.cpio on its last line.
#
# The cache key covers the package versions apt would fetch and this script and the guest's
# init, so a run after an archive update or an edit rebuilds and every other run only boots.
#   NDNIC_INTEROP_CACHE   cache directory (default /var/tmp/ndnic-interop)
# Exit status 2: the Debian archive could not be reached (the machine cannot get a guest).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${NDNIC_INTEROP_CACHE:-/var/tmp/ndnic-interop}
# ibverbs-utils brings ibv_rc_pingpong; rdmacm-utils brings rping; perftest brings
# ib_{send,write,read}_{bw,lat}; libfabric-bin brings fi_pingpong; iproute2 brings `rdma` (creates rxe0) and `ip`; the rest are
# their shared libraries, checked below.
readonly kGuestPackages="busybox-static libc6 libgcc-s1 libnl-3-200 libnl-route-3-200 libibverbs1
  ibverbs-providers ibverbs-utils librdmacm1 rdmacm-utils perftest libibumad3 libpci3 pci.ids iproute2 libmnl0 libbsd0 libmd0 libelf1 zlib1g libbpf1 libcap2
  libselinux1 libpcre2-8-0 libdb5.3 libxtables12 libudev1
  libfabric1 libfabric-bin libpsm2-2 libpsm-infinipath1 libatomic1 libuuid1 libnuma1"
# rdma_rxe and what it needs, rdma_ucm (rdma_cm for librdmacm), plus the virtio NIC; their
# dependencies come with them.
readonly kModules="rdma_rxe ib_uverbs rdma_ucm crc32_generic virtio_pci virtio_net"
readonly kBinaries="usr/bin/ibv_rc_pingpong usr/bin/rping usr/bin/ib_send_bw usr/bin/ib_read_lat usr/bin/ibv_devinfo bin/ip usr/bin/rdma usr/bin/fi_pingpong"

log() { echo "build-guest: $*" >&2; }

mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9  # two builds at once would race on the same key

kernel_package() { apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}'; }
KPKG=$(kernel_package || true)
if [ -z "$KPKG" ] || ! apt-get download --print-uris $KPKG $kGuestPackages >/dev/null 2>&1; then
  log "apt lists missing or stale: apt-get update"
  apt-get update -q >/dev/null || { log "apt-get update failed"; exit 2; }
  KPKG=$(kernel_package)
fi
KVER=${KPKG#linux-image-}
KEY=$( { apt-get download --print-uris $KPKG $kGuestPackages | awk '{print $2}' | sort
         cat "$0" "$HERE/guest-init.sh"; } | sha256sum | cut -c1-16)
OUT=$CACHE/guest-$KEY
if [ -f "$OUT/initrd.cpio" ] && [ -f "$OUT/vmlinux" ]; then
  log "cached guest $OUT (kernel $KVER)"
  echo "$OUT"
  exit 0
fi

log "building guest $KEY (kernel $KVER)"
W=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/debs" "$W/stage"
(cd "$W/debs" && apt-get download -q $KPKG $kGuestPackages >/dev/null 2>&1) || {
  log "apt-get download failed"; exit 2; }
for d in "$W"/debs/*.deb; do dpkg -x "$d" "$W/stage"; done
S=$W/stage

# QEMU boots the uncompressed ELF directly (PVH), which skips ~2.5 s of XZ decompression under
# TCG; the payload is the XZ stream inside the bzImage.
python3 - "$S/boot/vmlinuz-$KVER" "$W/vmlinux" <<'PY'
import lzma, sys
d = open(sys.argv[1], "rb").read()
i = d.find(b"\xfd7zXZ\x00")
open(sys.argv[2], "wb").write(lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[i:]))
PY

R=$W/initrd
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,root,usr/bin,usr/sbin,lib,lib64,usr/lib}
cp -a "$S/lib/x86_64-linux-gnu" "$R/lib/"
cp -a "$S/lib64/." "$R/lib64/"
cp -a "$S/usr/lib/x86_64-linux-gnu" "$R/usr/lib/"
rm -rf "$R/usr/lib/x86_64-linux-gnu/gconv"
# libpsm-infinipath1 puts its library aside and links it through alternatives in its postinst,
# which dpkg -x does not run: the link that libfabric's loader looks for is made here.
cp -a "$S/usr/lib/libpsm1" "$R/usr/lib/"
ln -s "/usr/lib/libpsm1/$(cd "$S/usr/lib/libpsm1" && ls libpsm_infinipath.so.1.*)" "$R/usr/lib/x86_64-linux-gnu/libpsm_infinipath.so.1"
cp -a "$S/etc/libibverbs.d" "$S/etc/iproute2" "$S/etc/libnl-3" "$R/etc/"
cp -a "$S/usr/bin/." "$R/usr/bin/"
cp -a "$S/sbin/." "$R/sbin/"
cp -a "$S/bin/ip" "$R/bin/"
cp "$S/bin/busybox" "$R/bin/busybox"
for a in $("$R/bin/busybox" --list-full); do
  [ -e "$R/$a" ] || [ -L "$R/$a" ] || ln -s /bin/busybox "$R/$a"
done

mkdir -p "$R/lib/modules/$KVER"
depmod -b "$S" "$KVER"
for m in $kModules; do
  modprobe -d "$S" -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
done | sort -u | while read -r ko; do
  rel=${ko#"$S"/}
  mkdir -p "$R/$(dirname "$rel")"
  cp "$ko" "$R/$rel"
done
cp "$S/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$R/lib/modules/$KVER/"
depmod -b "$R" "$KVER"
ldconfig -r "$R" 2>/dev/null || true
for b in $kBinaries; do
  if ! out=$(chroot "$R" /lib64/ld-linux-x86-64.so.2 --list "/$b" 2>&1) || echo "$out" | grep -q 'not found'; then
    log "/$b does not resolve its libraries in the initramfs:"; echo "$out" >&2; exit 1
  fi
done
echo "root:x:0:0:root:/root:/bin/sh" > "$R/etc/passwd"
echo "root:x:0:" > "$R/etc/group"
# libfabric's verbs provider resolves "localhost" for a server given no address (fi_pingpong's).
echo "127.0.0.1 localhost" > "$R/etc/hosts"
echo "hosts: files" > "$R/etc/nsswitch.conf"
install -m 755 "$HERE/guest-init.sh" "$R/init"
(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet) > "$W/initrd.cpio"

mkdir "$W/out"
mv "$W/vmlinux" "$W/initrd.cpio" "$W/out/"
echo "$KVER" > "$W/out/kernel-version"
rm -rf "$OUT"
mv "$W/out" "$OUT"
# Older keys are never used again.
find "$CACHE" -maxdepth 1 -name 'guest-*' ! -name "guest-$KEY" -exec rm -rf {} +
log "guest ready: $OUT ($(du -sh "$OUT" | cut -f1))"
echo "$OUT"
