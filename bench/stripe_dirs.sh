#!/usr/bin/env bash
# bench/stripe_dirs.sh - the directories bench/gpu.sh stripes a checkpoint
# over: one per NVMe drive, printed one a line (nothing when there are
# fewer than two, with the reason on stderr).
#
#   $GPU_BENCH_STRIPE_DIRS=a:b:c   use these (each must be a writable
#                                  directory); else
#   every writable mount point of a filesystem on an NVMe drive
#   (/dev/nvmeXnY or a partition of it), one per drive, the drive that
#   holds / left out (on a cloud VM it is usually the boot volume, and
#   the bench must not fill it).
#
# A RAID (md) device over several drives is one filesystem: the kernel
# already stripes it, so it is not a candidate here.
set -uo pipefail

if [[ -n ${GPU_BENCH_STRIPE_DIRS:-} ]]; then
	IFS=: read -r -a dirs <<<"$GPU_BENCH_STRIPE_DIRS"
	for d in "${dirs[@]}"; do
		if [[ ! -d $d || ! -w $d ]]; then
			echo "GPU_BENCH_STRIPE_DIRS: $d is not a writable directory" >&2
			exit 2
		fi
	done
	if ((${#dirs[@]} < 2)); then
		echo "GPU_BENCH_STRIPE_DIRS names ${#dirs[@]} directory; striping needs two or more" >&2
		exit 0
	fi
	printf '%s\n' "${dirs[@]}"
	exit 0
fi

# the drive of a device node: nvme0n1p2 -> nvme0n1
drive_of() {
	local dev=${1#/dev/}

	[[ $dev =~ ^(nvme[0-9]+n[0-9]+)(p[0-9]+)?$ ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

root_drive=$(drive_of "$(findmnt -n -o SOURCE / 2>/dev/null)") || root_drive=""
declare -A seen=()
out=()
# /proc/mounts escapes spaces as \040: such a mount point is skipped
while read -r src mnt _; do
	drive=$(drive_of "$src") || continue
	[[ $drive == "$root_drive" || -n ${seen[$drive]:-} ]] && continue
	[[ $mnt == *\\* || ! -d $mnt || ! -w $mnt ]] && continue
	seen[$drive]=1
	out+=("$mnt")
done </proc/mounts

if ((${#out[@]} < 2)); then
	echo "fewer than two NVMe drives mounted and writable (found ${#out[@]}${root_drive:+, not counting $root_drive, which holds /}); set GPU_BENCH_STRIPE_DIRS=a:b to choose directories" >&2
	exit 0
fi
printf '%s\n' "${out[@]}"
