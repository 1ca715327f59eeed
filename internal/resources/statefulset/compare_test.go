package statefulset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// clickhouseManifest is the StatefulSet Bitnami's ClickHouse chart (9.4.x) renders, cut to what
// the comparison cares about: one emptyDir volume mounted at several paths with different
// subPaths, a port on TCP and UDP, a port without protocol (the key's default, TCP), an env var
// from the downward API, and a claim template with apiVersion and kind.
const clickhouseManifest = `{
  "apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {"name": "clickhouse-shard0", "namespace": "olap",
    "labels": {"app.kubernetes.io/name": "clickhouse", "app.kubernetes.io/component": "clickhouse"}},
  "spec": {
    "replicas": 2, "podManagementPolicy": "Parallel", "serviceName": "clickhouse-headless",
    "selector": {"matchLabels": {"app.kubernetes.io/name": "clickhouse"}},
    "updateStrategy": {"type": "RollingUpdate"},
    "template": {
      "metadata": {"labels": {"app.kubernetes.io/name": "clickhouse"}},
      "spec": {
        "securityContext": {"fsGroup": 1001, "fsGroupChangePolicy": "Always"},
        "initContainers": [{"name": "prepare-config", "image": "docker.io/bitnami/clickhouse:25.7.5",
          "command": ["/bin/bash", "-ec"], "args": ["cp -r /opt/bitnami/clickhouse/etc/. /emptydir/app-conf-dir"],
          "volumeMounts": [
            {"name": "empty-dir", "mountPath": "/emptydir"},
            {"name": "config", "mountPath": "/bitnami/clickhouse/etc/conf.d/default"}]}],
        "containers": [{
          "name": "clickhouse", "image": "docker.io/bitnami/clickhouse:25.7.5",
          "env": [
            {"name": "BITNAMI_DEBUG", "value": "false"},
            {"name": "CLICKHOUSE_SHARD_ID", "value": "shard0"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
          "ports": [
            {"name": "http", "containerPort": 8123},
            {"name": "tcp", "containerPort": 9000, "protocol": "TCP"},
            {"name": "statsd", "containerPort": 8125, "protocol": "TCP"},
            {"name": "statsd-udp", "containerPort": 8125, "protocol": "UDP"},
            {"name": "http-metrics", "containerPort": 8001, "protocol": "TCP"}],
          "resources": {"requests": {"cpu": 1, "memory": "3072Mi"}, "limits": {"cpu": 1.5, "memory": "3Gi"}},
          "volumeMounts": [
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/etc", "subPath": "app-conf-dir"},
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/logs", "subPath": "app-logs-dir"},
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/tmp", "subPath": "app-tmp-dir"},
            {"name": "empty-dir", "mountPath": "/tmp", "subPath": "tmp-dir"},
            {"name": "data", "mountPath": "/bitnami/clickhouse"}]}],
        "volumes": [
          {"name": "empty-dir", "emptyDir": {}},
          {"name": "config", "configMap": {"name": "clickhouse"}}]}},
    "volumeClaimTemplates": [{
      "apiVersion": "v1", "kind": "PersistentVolumeClaim",
      "metadata": {"name": "data"},
      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "topolvm-provisioner",
        "resources": {"requests": {"storage": "8Gi"}}}}]}}`

// clickhouseStored is clickhouseManifest as the API server returns it: defaults filled in (ports'
// protocol, the fieldRef's apiVersion, imagePullPolicy, the claim's volumeMode and status),
// quantities canonicalised ("1500m"), volumeMounts in another order, and the claim template
// without apiVersion and kind, which the server drops.
const clickhouseStored = `{
  "apiVersion": "apps/v1", "kind": "StatefulSet",
  "metadata": {"name": "clickhouse-shard0", "namespace": "olap", "uid": "u", "generation": 1,
    "labels": {"app.kubernetes.io/name": "clickhouse", "app.kubernetes.io/component": "clickhouse"}},
  "spec": {
    "replicas": 2, "podManagementPolicy": "Parallel", "serviceName": "clickhouse-headless", "revisionHistoryLimit": 10,
    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    "selector": {"matchLabels": {"app.kubernetes.io/name": "clickhouse"}},
    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
    "template": {
      "metadata": {"creationTimestamp": null, "labels": {"app.kubernetes.io/name": "clickhouse"}},
      "spec": {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "securityContext": {"fsGroup": 1001, "fsGroupChangePolicy": "Always"},
        "initContainers": [{"name": "prepare-config", "image": "docker.io/bitnami/clickhouse:25.7.5",
          "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
          "command": ["/bin/bash", "-ec"], "args": ["cp -r /opt/bitnami/clickhouse/etc/. /emptydir/app-conf-dir"],
          "resources": {},
          "volumeMounts": [
            {"name": "empty-dir", "mountPath": "/emptydir"},
            {"name": "config", "mountPath": "/bitnami/clickhouse/etc/conf.d/default"}]}],
        "containers": [{
          "name": "clickhouse", "image": "docker.io/bitnami/clickhouse:25.7.5",
          "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
          "env": [
            {"name": "BITNAMI_DEBUG", "value": "false"},
            {"name": "CLICKHOUSE_SHARD_ID", "value": "shard0"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
          "ports": [
            {"name": "http", "containerPort": 8123, "protocol": "TCP"},
            {"name": "tcp", "containerPort": 9000, "protocol": "TCP"},
            {"name": "statsd", "containerPort": 8125, "protocol": "TCP"},
            {"name": "statsd-udp", "containerPort": 8125, "protocol": "UDP"},
            {"name": "http-metrics", "containerPort": 8001, "protocol": "TCP"}],
          "resources": {"requests": {"cpu": "1", "memory": "3Gi"}, "limits": {"cpu": "1500m", "memory": "3Gi"}},
          "volumeMounts": [
            {"name": "empty-dir", "mountPath": "/tmp", "subPath": "tmp-dir"},
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/etc", "subPath": "app-conf-dir"},
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/logs", "subPath": "app-logs-dir"},
            {"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/tmp", "subPath": "app-tmp-dir"},
            {"name": "data", "mountPath": "/bitnami/clickhouse"}]}],
        "volumes": [
          {"name": "empty-dir", "emptyDir": {}},
          {"name": "config", "configMap": {"name": "clickhouse", "defaultMode": 420}}]}},
    "volumeClaimTemplates": [{
      "metadata": {"name": "data", "creationTimestamp": null},
      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "topolvm-provisioner", "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "8Gi"}}},
      "status": {"phase": "Pending"}}]},
  "status": {"replicas": 2, "availableReplicas": 2}}`

func TestUserFieldDiffsClickHouseChart(t *testing.T) {
	t.Parallel()
	want := mustDecode(t, clickhouseManifest)
	if d := userFieldDiffs(want, mustDecode(t, clickhouseStored)); len(d) != 0 {
		t.Fatalf("the chart's StatefulSet as stored is reported as drift:\n%v", d)
	}

	mount := `{"name": "empty-dir", "mountPath": "/opt/bitnami/clickhouse/logs", "subPath": "app-logs-dir"}`
	moved := `{"name": "empty-dir", "mountPath": "/var/log/clickhouse", "subPath": "app-logs-dir"}`
	cases := map[string]struct {
		old, new string
		want     []string
	}{
		"a mountPath the server changed": {
			old: mount, new: moved,
			want: []string{`spec.template.spec.containers[name=clickhouse].volumeMounts[mountPath=/opt/bitnami/clickhouse/logs]: configured {"mountPath":"/opt/bitnami/clickhouse/logs","name":"empty-dir","subPath":"app-logs-dir"}, stored (absent)`},
		},
		"a subPath the server changed": {
			old: `"subPath": "app-tmp-dir"`, new: `"subPath": "other"`,
			want: []string{`spec.template.spec.containers[name=clickhouse].volumeMounts[mountPath=/opt/bitnami/clickhouse/tmp].subPath: configured "app-tmp-dir", stored "other"`},
		},
		"an image the server changed": {
			old: `"name": "clickhouse", "image": "docker.io/bitnami/clickhouse:25.7.5"`, new: `"name": "clickhouse", "image": "mirror.local/clickhouse:25.7.5"`,
			want: []string{`spec.template.spec.containers[name=clickhouse].image: configured "docker.io/bitnami/clickhouse:25.7.5", stored "mirror.local/clickhouse:25.7.5"`},
		},
		"the UDP port's protocol the server changed": {
			old: `"containerPort": 8125, "protocol": "UDP"`, new: `"containerPort": 8125, "protocol": "SCTP"`,
			want: []string{`spec.template.spec.containers[name=clickhouse].ports[containerPort=8125,protocol=UDP]: configured {"containerPort":8125,"name":"statsd-udp","protocol":"UDP"}, stored (absent)`},
		},
		"a claim template's storage class": {
			old: `"storageClassName": "topolvm-provisioner", "volumeMode"`, new: `"storageClassName": "standard", "volumeMode"`,
			want: []string{`spec.volumeClaimTemplates[0].spec.storageClassName: configured "topolvm-provisioner", stored "standard"`},
		},
		"a quantity the server changed": {
			old: `"limits": {"cpu": "1500m"`, new: `"limits": {"cpu": "2"`,
			want: []string{`spec.template.spec.containers[name=clickhouse].resources.limits.cpu: configured 1.5, stored "2"`},
		},
		"an atomic list the server changed": {
			old: `"command": ["/bin/bash", "-ec"]`, new: `"command": ["/bin/sh", "-ec"]`,
			want: []string{`spec.template.spec.initContainers[name=prepare-config].command[0]: configured "/bin/bash", stored "/bin/sh"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if strings.Count(clickhouseStored, tc.old) != 1 {
				t.Fatalf("%s is not once in the stored object", tc.old)
			}
			stored := mustDecode(t, strings.Replace(clickhouseStored, tc.old, tc.new, 1))
			var got []string
			for _, d := range userFieldDiffs(want, stored) {
				got = append(got, d.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			// Refresh records the stored values; compared again they are no drift.
			merged := mergeLive(want, stored)
			if d := userFieldDiffs(merged, stored); len(d) != 0 {
				t.Fatalf("the merged manifest still differs from the stored object:\n%v", d)
			}
			var planned []string
			for _, d := range userFieldDiffs(want, merged) {
				planned = append(planned, d.String())
			}
			if diff := cmp.Diff(tc.want, planned); diff != "" {
				t.Fatalf("the configuration against the merged manifest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUserFieldDiffsOutsideSchema(t *testing.T) {
	t.Parallel()
	want := mustDecode(t, `{"spec":{"replicas":1,"notAField":true}}`)
	d := userFieldDiffs(want, mustDecode(t, `{"spec":{"replicas":1}}`))
	if len(d) != 1 || d[0].Err == nil || !strings.Contains(d[0].String(), "notAField") {
		t.Fatalf("want one schema error naming the field, got %v", d)
	}
	if got := mergeLive(want, mustDecode(t, `{"spec":{"replicas":2}}`)); !cmp.Equal(got, want) {
		t.Fatalf("mergeLive changed a manifest it cannot compare: %v", got)
	}
}

func TestMergeLiveKeepsNulls(t *testing.T) {
	t.Parallel()
	want := map[string]any{"spec": map[string]any{"replicas": mustDecode(t, "3"), "serviceName": nil}}
	got := mustDecode(t, `{"spec":{"replicas":2}}`)
	exp := map[string]any{"spec": map[string]any{"replicas": mustDecode(t, "2"), "serviceName": nil}}
	if diff := cmp.Diff(exp, mergeLive(want, got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
