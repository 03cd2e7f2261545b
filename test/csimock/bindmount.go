package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// bindMounter is --bind-mounts: each volume is a directory <state-dir>/<volume ID, path-escaped>
// that outlives its pods, as a real volume's data does. NodePublishVolume bind-mounts it onto the
// target path (read-only when asked), so a pod writes through it; NodeUnpublishVolume unmounts
// it; NodeGetVolumeStats answers from statfs of it. NodeStageVolume does nothing more than the
// upstream service does. Where this process may not mount (not root) the target path stays the
// plain directory the upstream service makes, and the call log says so.
type bindMounter struct {
	stateDir string
	canMount bool
}

// bindNote is what the call log records of a publish or unpublish in this mode.
type bindNote struct {
	Source  string `json:"source,omitempty"`
	Target  string `json:"target"`
	Mounted bool   `json:"mounted"`
	Skipped string `json:"skipped,omitempty"`
}

func newBindMounter(stateDir string) (*bindMounter, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	return &bindMounter{stateDir: stateDir, canMount: os.Geteuid() == 0}, nil
}

func (b *bindMounter) volumeDir(volumeID string) string {
	return filepath.Join(b.stateDir, url.PathEscape(volumeID))
}

func (b *bindMounter) publish(volumeID, target string, readOnly bool) (bindNote, error) {
	source := b.volumeDir(volumeID)
	note := bindNote{Source: source, Target: target}
	if err := os.MkdirAll(source, 0o777); err != nil {
		return note, err
	}
	// Writable by a pod of any user, as an emptyDir is; the umask would take the bits away.
	if err := os.Chmod(source, 0o777); err != nil {
		return note, err
	}
	// The upstream service makes the target of a persistent volume, not of an inline one.
	if err := os.Mkdir(target, 0o750); err != nil && !os.IsExist(err) {
		return note, err
	}
	if !b.canMount {
		note.Skipped = "not root: the target path is a plain directory"
		return note, nil
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return note, err
	}
	if !mounted {
		if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
			return note, err
		}
		if readOnly {
			if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				syscall.Unmount(target, 0)
				return note, err
			}
		}
	}
	note.Mounted = true
	return note, nil
}

func (b *bindMounter) unpublish(target string) (bindNote, error) {
	note := bindNote{Target: target}
	if !b.canMount {
		note.Skipped = "not root: nothing was mounted"
		return note, nil
	}
	mounted, err := isMountPoint(target)
	if err != nil || !mounted {
		return note, err
	}
	if err := syscall.Unmount(target, 0); err != nil {
		return note, err
	}
	return note, nil
}

// usage is the volume's directory's filesystem, in NodeGetVolumeStats' two units.
func (b *bindMounter) usage(volumeID string) ([]*csi.VolumeUsage, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(b.volumeDir(volumeID), &fs); err != nil {
		return nil, err
	}
	size := fs.Bsize
	return []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(fs.Blocks) * size, Available: int64(fs.Bavail) * size, Used: int64(fs.Blocks-fs.Bfree) * size},
		{Unit: csi.VolumeUsage_INODES, Total: int64(fs.Files), Available: int64(fs.Ffree), Used: int64(fs.Files - fs.Ffree)},
	}, nil
}

// isMountPoint reads /proc/self/mountinfo: a bind mount from the same filesystem has its parent's
// device number, so stat cannot tell.
func isMountPoint(path string) (bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	clean := filepath.Clean(path)
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == clean {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountinfo decodes the octal escapes (\040 for a space) the kernel writes in mountinfo.
func unescapeMountinfo(field string) string {
	var out strings.Builder
	for i := 0; i < len(field); i++ {
		if field[i] == '\\' && i+4 <= len(field) {
			if n, err := strconv.ParseUint(field[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		out.WriteByte(field[i])
	}
	return out.String()
}
