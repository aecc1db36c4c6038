# cachebuild.sh, sourced by hack/testbin.sh and hack/tools.sh: build once
# per machine into a cache directory, under flock(1) so that concurrent
# callers build only once. The caller defines log().

# cached_build DIR CHECK BUILD WHAT: unless CHECK (a command) says DIR is
# complete, runs BUILD TMP in a fresh temporary directory beside DIR, marks
# it complete (.complete) and moves it to DIR. WHAT names the build in the
# progress lines (stderr).
cached_build() {
	local dir=$1 check=$2 build=$3 what=$4
	"$check" && return 0
	local root key
	root=$(dirname "$dir")
	key=$(basename "$dir")
	mkdir -p "$root"
	build_lock "$root/.lock-$key" "$dir"
	# Someone else may have finished the build while we waited.
	"$check" && return 0
	local tmp start=$SECONDS
	tmp=$(mktemp -d "$root/.build-$key.XXXXXX")
	# shellcheck disable=SC2064 # expanded now: tmp is local
	trap "rm -rf '$tmp'" EXIT
	log "building $what into $dir (several minutes on a cold cache)"
	"$build" "$tmp"
	touch "$tmp/.complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT
	log "built in $((SECONDS - start))s"
}

# build_lock FILE WHAT: holds an exclusive flock(1) on FILE (fd 9) for the
# rest of the shell, first waiting, with a line saying so, while another
# process holds it (building WHAT). Without flock(1) it says so and goes on.
build_lock() {
	local file=$1 what=$2
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$file"
		if ! flock -n 9; then
			log "another process is building $what; waiting for it"
			flock 9
		fi
	else
		log "flock(1) not found: building without a lock"
	fi
}
