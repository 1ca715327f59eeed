package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ListItems is one LIST of every object of a built-in resource (e.g. "nodes"; namespace "" for
// all namespaces or a cluster-scoped resource), retried as List is, whose response is decoded
// one item at a time as it is read, without the items' managedFields (withoutManagedFields). typed is the same LIST through the typed client (e.g.
// kube.CoreV1().Nodes().List, items taken out); it answers, through List, instead when rc is
// not a REST client (a fake clientset) or the server does not answer in protobuf.
//
// Why not client-go's decoding: it reads the whole body (io.ReadAll: growing chunks, then one
// copy into a slice of the final size), then copies the list out of its envelope
// (runtime.Unknown), then decodes the copy. For 5,000 nodes that is about 70 MB of fresh memory
// for an 18 MB body, before a single Node exists. A provider process is new on every terraform
// command, so none of it is reused memory: on the bench's machine first touching a page costs
// about 12 us, and reading and decoding the LISTs took about half of the plan's CPU (issue 47).
// Here the body streams through one buffer the size of the largest item, and each item is
// decoded by its own generated Unmarshal, which copies what it keeps. The wire format is the one
// client-go reads: the 4-byte "k8s\x00" prefix, then a runtime.Unknown (field 2: the list's own
// bytes) whose list has its items as field 2 (k8s.io/apimachinery
// pkg/runtime/serializer/protobuf/protobuf.go, pkg/runtime/generated.proto; k8s.io/api
// core/v1/generated.proto).
func ListItems[T any, PT interface {
	*T
	Unmarshal([]byte) error
}](ctx context.Context, rc rest.Interface, resource, namespace string, typed func(context.Context, metav1.ListOptions) ([]T, error)) ([]T, error) {
	c, ok := rc.(*rest.RESTClient)
	if !ok || c == nil || c.Client == nil {
		return typedWithoutManagedFields(ctx, typed)
	}
	var items []T
	notProtobuf := false
	err := RetryRead(ctx, func(ctx context.Context) error {
		body, err := c.Get().NamespaceIfScoped(namespace, namespace != "").Resource(resource).
			VersionedParams(&metav1.ListOptions{}, scheme.ParameterCodec).
			SetHeader("Accept", protobufType).Stream(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = body.Close() }()
		items, err = DecodeItems[T, PT](body)
		if errors.Is(err, errNotProtobuf) {
			notProtobuf = true
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if notProtobuf {
		return typedWithoutManagedFields(ctx, typed)
	}
	return items, nil
}

// typedWithoutManagedFields is ListItems' fallback: the LIST through the typed client, its items'
// managedFields dropped as ListItems drops them from protobuf (withoutManagedFields).
func typedWithoutManagedFields[T any](ctx context.Context, typed func(context.Context, metav1.ListOptions) ([]T, error)) ([]T, error) {
	items, err := List(ctx, typed, metav1.ListOptions{})
	for i := range items {
		if o, ok := any(&items[i]).(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
	}
	return items, err
}

const protobufType = "application/vnd.kubernetes.protobuf"

var (
	protobufPrefix = []byte("k8s\x00")
	errNotProtobuf = errors.New("the response is not protobuf")
)

// DecodeItems reads one LIST response body in protobuf from body and decodes its items, one at
// a time (ListItems' decoding). A body that is not protobuf is errNotProtobuf; one cut short is
// io.ErrUnexpectedEOF (transient), never a shorter list.
func DecodeItems[T any, PT interface {
	*T
	Unmarshal([]byte) error
}](body io.Reader) ([]T, error) {
	r := bufio.NewReaderSize(body, 64<<10)
	prefix, err := r.Peek(len(protobufPrefix))
	if err != nil || !bytes.Equal(prefix, protobufPrefix) {
		return nil, errNotProtobuf
	}
	_, _ = r.Discard(len(protobufPrefix))
	var items []T
	var buf, scratch []byte
	lists := 0
	// The envelope: skip everything but its raw bytes (field 2), which are the list.
	err = fields(r, -1, func(field int, n int64) error {
		if field != 2 {
			return skip(r, n)
		}
		lists++
		listLen := n
		// The list: skip its metadata (field 1), decode each item (field 2).
		return fields(r, n, func(field int, n int64) error {
			if field != 2 {
				return skip(r, n)
			}
			if items == nil {
				items = make([]T, 0, capacityHint[T](listLen, n))
			}
			if int64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			b := buf[:n]
			if _, err := io.ReadFull(r, b); err != nil {
				return unexpectedEOF(err)
			}
			b, scratch = withoutManagedFields(b, scratch[:0])
			var item T
			if err := PT(&item).Unmarshal(b); err != nil {
				return err
			}
			items = append(items, item)
			return nil
		})
	})
	switch {
	case err == nil && lists == 0:
		err = fmt.Errorf("the body ended before its list: %w", io.ErrUnexpectedEOF)
	case err == nil && lists > 1:
		err = fmt.Errorf("the response holds %d lists, not 1", lists)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the list: %w", err)
	}
	return items, nil
}

// Field numbers of the protobuf encoding of every Kubernetes object (k8s.io/api
// */generated.proto: metadata is field 1 of each kind) and of its metadata (k8s.io/apimachinery
// pkg/apis/meta/v1/generated.proto: ObjectMeta.managedFields is field 17).
const (
	objectMetadataField = 1
	managedFieldsField  = 17
)

// withoutManagedFields is item (one object's protobuf bytes) without its metadata's
// managedFields, written into out, or item itself when it has none or cannot be read (Unmarshal
// then reports what is wrong with it). Nothing that reads a list through ListItems uses
// managedFields (the snapshot's Pods, Nodes, PVs, claims, storage objects and PDBs), and they
// are about half of a Node's or a Pod's bytes (server-side apply records one entry per field
// manager, each with the JSON of the fields it owns): decoding them was most of the LISTs'
// allocations at 5,000 nodes (issue 47).
func withoutManagedFields(item, out []byte) ([]byte, []byte) {
	var meta []byte
	metaStart, metaEnd, pos := -1, -1, 0
	if !eachField(item, func(num protowire.Number, typ protowire.Type, field []byte) {
		if num == objectMetadataField && typ == protowire.BytesType && metaStart < 0 {
			_, _, n := protowire.ConsumeTag(field)
			meta, _ = protowire.ConsumeBytes(field[n:])
			metaStart, metaEnd = pos, pos+len(field)
		}
		pos += len(field)
	}) || metaStart < 0 {
		return item, out
	}
	keptLen, dropped := 0, false
	if !eachField(meta, func(num protowire.Number, _ protowire.Type, field []byte) {
		if num == managedFieldsField {
			dropped = true
		} else {
			keptLen += len(field)
		}
	}) || !dropped {
		return item, out
	}
	// The object with its metadata's other fields in place of the old metadata.
	out = append(out, item[:metaStart]...)
	out = protowire.AppendTag(out, objectMetadataField, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(keptLen))
	eachField(meta, func(num protowire.Number, _ protowire.Type, field []byte) {
		if num != managedFieldsField {
			out = append(out, field...)
		}
	})
	out = append(out, item[metaEnd:]...)
	return out, out
}

// eachField calls f with each top-level field of the message b (its number, wire type and
// bytes, tag included) and reports whether b was read to its end (false: not a message).
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, field []byte)) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		f(num, typ, b[:n+m])
		b = b[n+m:]
	}
	return true
}

// fields reads the length-delimited fields of a message of size bytes (-1: up to the end of r)
// and hands each to f with its length; f consumes exactly that many bytes. Only wire type 2
// occurs in these messages (k8s.io/apimachinery pkg/runtime/generated.proto; every list of
// k8s.io/api has only its metadata and items).
func fields(r *bufio.Reader, size int64, f func(field int, n int64) error) error {
	var read int64
	for size < 0 || read < size {
		key, err := binary.ReadUvarint(r)
		if err == io.EOF && size < 0 {
			return nil // the body ends between two fields of the envelope
		}
		if err != nil {
			return unexpectedEOF(err)
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return unexpectedEOF(err)
		}
		num, typ := protowire.DecodeTag(key)
		if typ != protowire.BytesType {
			return fmt.Errorf("field %d has wire type %d, not %d", num, typ, protowire.BytesType)
		}
		read += int64(protowire.SizeVarint(key)+protowire.SizeVarint(n)) + int64(n)
		if size >= 0 && read > size {
			return fmt.Errorf("field %d overruns its message", num)
		}
		if err := f(int(num), int64(n)); err != nil {
			return err
		}
	}
	return nil
}

// capacityHint is how many items a list of listLen bytes whose first item is first bytes long
// probably holds (items of one kind are of a size), so the items are not copied again and again
// as the slice grows: 5,000 nodes were 20 MB of slices for 5 MB of items. A small first item
// cannot make the slice larger than twice the list's bytes.
func capacityHint[T any](listLen, first int64) int64 {
	est := listLen / (first + 1 + int64(protowire.SizeVarint(uint64(first))))
	est += est / 8
	if size := int64(unsafe.Sizeof(*new(T))); size > 0 {
		est = min(est, 2*listLen/size)
	}
	return max(est, 1)
}

func skip(r *bufio.Reader, n int64) error {
	_, err := io.CopyN(io.Discard, r, n)
	return unexpectedEOF(err)
}

// unexpectedEOF: a body that ends inside a message was cut short (a transient failure, as
// client-go's reading of a whole body reports it), not complete.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
