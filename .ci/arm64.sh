#!/usr/bin/env bash
# Installs what the arm64 stage needs on the x86-64 CI machine: the cross
# compiler, qemu-user with binfmt (arm64 programs run as if native),
# Debian's arm64 C library beside the native one (multiarch), and Debian
# bookworm's arm64 CPython 3.11 unpacked into /opt/arm64root. The packages
# are bookworm's (the suite pins them).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static binfmt-support)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v file >/dev/null || need+=(file)
dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
[ -e /lib/ld-linux-aarch64.so.1 ] && dpkg -s libffi8:arm64 >/dev/null 2>&1 || need+=(libc6:arm64 libffi8:arm64 zlib1g:arm64 libexpat1:arm64)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64
if [ ! -x /opt/arm64root/usr/bin/python3.11 ]; then
	debootstrap --arch=arm64 --variant=minbase --include=python3 --foreign bookworm /opt/arm64root http://deb.debian.org/debian >/dev/null
	for f in /opt/arm64root/var/cache/apt/archives/*.deb; do dpkg -x "$f" /opt/arm64root; done
fi
/opt/arm64root/usr/bin/python3.11 -c 'import platform, ctypes; assert platform.machine() == "aarch64"'
echo "arm64: $(aarch64-linux-gnu-gcc --version | head -1), $(qemu-aarch64-static --version | head -1), CPython $(/opt/arm64root/usr/bin/python3.11 -c 'import platform; print(platform.python_version())')"
