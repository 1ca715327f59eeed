package topolvmreal

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/topolvm/topolvm/pkg/lvmd/proto"
	"google.golang.org/grpc"
)

// What TopoLVM's node server runs when the kubelet publishes a volume (topolvm v0.41.0
// internal/driver/node.go nodePublishFilesystemVolume, with k8s.io/mount-utils v0.35.4
// SafeFormatAndMount and ResizeFs): /sbin/blkid on the logical volume's device
// (internal/filesystem DetectFilesystem, an absolute path), then, for a volume without a
// filesystem, wipefs -a, blkid, mkfs.<fstype> and mount; for one with a filesystem, blkid, fsck -a
// and mount only when FormatAndMount runs; then blockdev --getro, blkid and xfs_growfs (or
// resize2fs) from NeedResize/Resize. No Local SSD, device-mapper or mount is here: the stand-ins
// below, on the process's PATH, record each call (one line, the program and its arguments, in
// the record file) and act on the device file the way the tool acts on a disk, so that the real
// blkid sees what it would see:
//
//   - a logical volume's device is a sparse file of its size (devicePaths below), under the
//     node's VM (a same-name recreation gets new, empty devices);
//   - mkfs.xfs / mkfs.ext4 write a filesystem signature the real blkid recognises (a minimal XFS
//     v4 superblock at 0, an ext4 superblock at 1024: xfsSuperblock, ext4Superblock), and nothing
//     else: a volume published again (its Pod recreated on the same node) is found formatted and
//     is not formatted again, as on a node;
//   - wipefs -a zeroes those signatures; blkid is the real /sbin/blkid;
//   - mount, fsck, xfs_growfs and resize2fs succeed and change nothing: nothing is mounted, so
//     the target directory stays a plain directory, and NodeUnpublishVolume (mount-utils
//     CleanupMountPoint) finds it not mounted and removes it without running umount;
//   - blockdev --getro answers 0 (writable); --getsize64 is refused (mount-utils asks it only
//     for btrfs).
//
// There is no umount stand-in on purpose: mount-utils' constructor probes `umount` once per
// node server (noMounterProbe in cmd/olapgke-topolvm), and a stand-in would make that a process
// per node agent at start-up. Unmounting is never reached (nothing is mounted).

// standInTools are the programs TopoLVM's node server and mount-utils run by name (PATH).
var standInTools = []string{"wipefs", "blkid", "mkfs.xfs", "mkfs.ext4", "fsck", "mount", "blockdev", "xfs_growfs", "resize2fs"}

// realBlkid is the blkid TopoLVM's DetectFilesystem runs by absolute path; the blkid stand-in
// records and runs it too.
const realBlkid = "/sbin/blkid"

// WriteStandIns writes the recording stand-ins (/bin/sh scripts using only shell builtins, so
// that they run with PATH = dir) into dir; each appends its command line to record.
func WriteStandIns(dir, record string) error {
	if strings.ContainsAny(dir+record, "'\n") {
		return fmt.Errorf("stand-in directory or record path holds a quote or newline: %q, %q", dir, record)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(realBlkid); err != nil {
		return fmt.Errorf("TopoLVM's node server runs %s (util-linux) to find a volume's filesystem: %w", realBlkid, err)
	}
	for _, tool := range standInTools {
		var body string
		switch tool {
		case "blkid":
			body = "exec " + realBlkid + ` "$@"`
		case "wipefs":
			body = `printf '` + octal(make([]byte, 2048)) + `' 1<>"$dev"`
		case "mkfs.xfs":
			body = `printf '` + octal(xfsSuperblock()) + `' 1<>"$dev"`
		case "mkfs.ext4":
			body = `printf '` + octal(ext4Superblock()) + `' 1<>"$dev"`
		case "blockdev":
			body = `case "$1" in --getro) echo 0 ;; *) echo "blockdev $1: not in the sandbox" >&2; exit 1 ;; esac`
		default:
			body = "exit 0"
		}
		script := "#!/bin/sh\n# olapgke-topolvm's recording stand-in for " + tool + " (topolvmreal/mounts.go)\n" +
			`echo "` + tool + ` $*" >>'` + record + "'\n" +
			"for a; do dev=$a; done\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// octal spells b as printf escapes (three octal digits each: no escape runs into the next).
func octal(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		fmt.Fprintf(&sb, `\%03o`, c)
	}
	return sb.String()
}

// xfsSuperblock is the smallest XFS (v4) superblock that util-linux libblkid's xfs prober
// accepts (libblkid/src/superblocks/xfs.c xfs_verify_sb: block, sector and inode sizes and their
// logs consistent, one allocation group of dblocks blocks). Big-endian, as on disk.
func xfsSuperblock() []byte {
	const dblocks = 4096
	sb := make([]byte, 512)
	be := binary.BigEndian
	copy(sb[0:], "XFSB")
	be.PutUint32(sb[4:], 4096)                                    // sb_blocksize
	be.PutUint64(sb[8:], dblocks)                                 // sb_dblocks
	copy(sb[32:48], "olapgke-sandbox!")                           // sb_uuid
	be.PutUint64(sb[56:], 128)                                    // sb_rootino
	be.PutUint32(sb[80:], 1)                                      // sb_rextsize
	be.PutUint32(sb[84:], dblocks)                                // sb_agblocks
	be.PutUint32(sb[88:], 1)                                      // sb_agcount
	be.PutUint32(sb[96:], 1024)                                   // sb_logblocks
	be.PutUint16(sb[100:], 4)                                     // sb_versionnum (v4: no CRC)
	be.PutUint16(sb[102:], 512)                                   // sb_sectsize
	be.PutUint16(sb[104:], 256)                                   // sb_inodesize
	be.PutUint16(sb[106:], 16)                                    // sb_inopblock
	sb[120], sb[121], sb[122], sb[123], sb[124] = 12, 9, 8, 4, 12 // block, sect, inode, inopb, agblk logs
	sb[127] = 25                                                  // sb_imax_pct
	return sb
}

// ext4Superblock is 1024 zero bytes and an ext4 superblock (little-endian, at byte 1024) that
// libblkid's ext4 prober accepts: magic 0xEF53, revision 1, has_journal, filetype and extents.
func ext4Superblock() []byte {
	b := make([]byte, 2048)
	sb := b[1024:]
	le := binary.LittleEndian
	le.PutUint32(sb[0:], 1024)            // s_inodes_count
	le.PutUint32(sb[4:], 4096)            // s_blocks_count
	le.PutUint32(sb[20:], 0)              // s_first_data_block
	le.PutUint32(sb[24:], 2)              // s_log_block_size (4 KiB)
	le.PutUint32(sb[32:], 32768)          // s_blocks_per_group
	le.PutUint32(sb[40:], 1024)           // s_inodes_per_group
	le.PutUint16(sb[56:], 0xEF53)         // s_magic
	le.PutUint32(sb[76:], 1)              // s_rev_level
	le.PutUint32(sb[92:], 0x4)            // s_feature_compat: has_journal
	le.PutUint32(sb[96:], 0x2|0x40)       // s_feature_incompat: filetype, extents
	le.PutUint32(sb[100:], 0x1)           // s_feature_ro_compat: sparse_super
	copy(sb[104:120], "olapgke-sandbox!") // s_uuid
	return b
}

// devicePaths is the node's /dev as TopoLVM's node server sees it: lvmd answers a logical
// volume's path as /dev/<vg>/<lv> (the device node udev made when lvcreate activated it); here
// that path names a sparse file of the volume's size under dir (the node's VM), made when the
// node server first looks the volume up. Only the node server's client goes through it.
type devicePaths struct {
	proto.VGServiceClient
	dir string
}

// GetLVList implements proto.VGServiceClient.
func (d devicePaths) GetLVList(ctx context.Context, in *proto.GetLVListRequest, opts ...grpc.CallOption) (*proto.GetLVListResponse, error) {
	res, err := d.VGServiceClient.GetLVList(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	for _, lv := range res.GetVolumes() {
		p := filepath.Join(d.dir, strings.TrimPrefix(lv.GetPath(), "/dev/"))
		if err := ensureDevice(p, lv.GetSizeBytes()); err != nil {
			return nil, err
		}
		lv.Path = p
	}
	return res, nil
}

// ensureDevice makes p a (sparse) file of at least size bytes; a grown volume's device grows.
func ensureDevice(p string, size int64) error {
	st, err := os.Stat(p)
	if err == nil && st.Size() >= size {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
