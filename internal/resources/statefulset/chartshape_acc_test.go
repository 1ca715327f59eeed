package statefulset_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olapgke/terraform-provider-olapgke/internal/acctest"
)

// clickhouseChartConfig is the StatefulSet Bitnami's ClickHouse chart (9.4.x) renders, as its
// YAML (trimmed of what does not matter here, requests shrunk for the sandbox's nodes): one
// emptyDir volume mounted at several mountPaths with different subPaths, the same containerPort
// on TCP and UDP, ports without protocol, probes the server fills in, quantities it rewrites
// (cpu: 1.5, memory: 3072Mi) and a claim template with apiVersion and kind, which the server drops.
// The chart renders its own headless Service, so manage_service is off.
func clickhouseChartConfig(ns, tag string) string {
	return fmt.Sprintf(`
resource "olapgke_statefulset" "test" {
  manage_service = false
  manifest = yamldecode(<<-EOT
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: clickhouse-shard0
      namespace: %[1]s
      labels:
        app.kubernetes.io/instance: clickhouse
        app.kubernetes.io/managed-by: Helm
        app.kubernetes.io/name: clickhouse
        app.kubernetes.io/version: 25.7.5
        helm.sh/chart: clickhouse-9.4.4
        app.kubernetes.io/component: clickhouse
    spec:
      replicas: 2
      podManagementPolicy: Parallel
      selector:
        matchLabels:
          app.kubernetes.io/instance: clickhouse
          app.kubernetes.io/name: clickhouse
          app.kubernetes.io/component: clickhouse
      serviceName: clickhouse-headless
      updateStrategy:
        type: RollingUpdate
      template:
        metadata:
          labels:
            app.kubernetes.io/instance: clickhouse
            app.kubernetes.io/managed-by: Helm
            app.kubernetes.io/name: clickhouse
            app.kubernetes.io/version: 25.7.5
            helm.sh/chart: clickhouse-9.4.4
            app.kubernetes.io/component: clickhouse
            shard: "0"
        spec:
          automountServiceAccountToken: false
          affinity:
            podAntiAffinity:
              preferredDuringSchedulingIgnoredDuringExecution:
              - podAffinityTerm:
                  labelSelector:
                    matchLabels:
                      app.kubernetes.io/instance: clickhouse
                      app.kubernetes.io/name: clickhouse
                  topologyKey: kubernetes.io/hostname
                weight: 1
          nodeSelector:
            cloud.google.com/gke-nodepool: pool-a
          securityContext:
            fsGroup: 1001
            fsGroupChangePolicy: Always
            supplementalGroups: []
            sysctls: []
          containers:
          - name: clickhouse
            image: docker.io/bitnami/clickhouse:%[2]s
            imagePullPolicy: IfNotPresent
            securityContext:
              allowPrivilegeEscalation: false
              capabilities:
                drop: ["ALL"]
              privileged: false
              readOnlyRootFilesystem: true
              runAsGroup: 1001
              runAsNonRoot: true
              runAsUser: 1001
              seLinuxOptions: {}
              seccompProfile:
                type: RuntimeDefault
            command: ["/scripts/setup.sh"]
            env:
            - name: BITNAMI_DEBUG
              value: "false"
            - name: CLICKHOUSE_HTTP_PORT
              value: "8123"
            - name: CLICKHOUSE_SHARD_ID
              value: "shard0"
            - name: CLICKHOUSE_REPLICA_ID
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            resources:
              limits:
                cpu: 1.5
                ephemeral-storage: 2Gi
                memory: 3072Mi
              requests:
                cpu: 250m
                ephemeral-storage: 50Mi
                memory: 512Mi
            ports:
            - name: http
              containerPort: 8123
            - name: tcp
              containerPort: 9000
            - name: tcp-mysql
              containerPort: 9004
            - name: tcp-postgresql
              containerPort: 9005
            - name: http-intersrv
              containerPort: 9009
            - name: statsd
              containerPort: 8125
              protocol: TCP
            - name: statsd-udp
              containerPort: 8125
              protocol: UDP
            livenessProbe:
              failureThreshold: 3
              initialDelaySeconds: 10
              periodSeconds: 10
              successThreshold: 1
              timeoutSeconds: 1
              httpGet:
                path: /ping
                port: http
            readinessProbe:
              failureThreshold: 3
              initialDelaySeconds: 10
              periodSeconds: 10
              successThreshold: 1
              timeoutSeconds: 1
              httpGet:
                path: /ping
                port: http
            volumeMounts:
            - name: empty-dir
              mountPath: /opt/bitnami/clickhouse/etc
              subPath: app-conf-dir
            - name: empty-dir
              mountPath: /opt/bitnami/clickhouse/logs
              subPath: app-logs-dir
            - name: empty-dir
              mountPath: /opt/bitnami/clickhouse/tmp
              subPath: app-tmp-dir
            - name: empty-dir
              mountPath: /tmp
              subPath: tmp-dir
            - name: scripts
              mountPath: /scripts/setup.sh
              subPath: setup.sh
            - name: data
              mountPath: /bitnami/clickhouse
            - name: config
              mountPath: /bitnami/clickhouse/etc/conf.d/default
          volumes:
          - name: scripts
            configMap:
              name: clickhouse-scripts
          - name: empty-dir
            emptyDir: {}
          - name: config
            configMap:
              name: clickhouse
      volumeClaimTemplates:
      - apiVersion: v1
        kind: PersistentVolumeClaim
        metadata:
          name: data
          labels:
            app.kubernetes.io/instance: clickhouse
            app.kubernetes.io/name: clickhouse
        spec:
          accessModes:
          - "ReadWriteOnce"
          resources:
            requests:
              storage: "1Gi"
          storageClassName: topolvm-provisioner
    EOT
  )
}
`, ns, tag)
}

// Issue #41 item 3: the chart's StatefulSet applies, and neither the after-apply comparison nor
// the next refresh reports its emptyDir mounts or claim template as drift.
func TestAccStatefulSet_ClickHouseChartShape(t *testing.T) {
	env := acctest.Sandbox(t)
	t.Parallel()
	ns := namespace(t, env.Kube, "sts-chart")
	empty := []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories,
		CheckDestroy:             checkGone(env.Kube, ns, "clickhouse-shard0"),
		Steps: []resource.TestStep{
			{
				Config: clickhouseChartConfig(ns, "25.7.5"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: empty,
				},
				Check: func(*terraform.State) error {
					// The server stored every mount of the one emptyDir (mountPath is the key).
					set, err := env.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), "clickhouse-shard0", metav1.GetOptions{})
					if err != nil {
						return err
					}
					n := 0
					for _, m := range set.Spec.Template.Spec.Containers[0].VolumeMounts {
						if m.Name == "empty-dir" {
							n++
						}
					}
					if n != 4 {
						return fmt.Errorf("stored StatefulSet has %d mounts of empty-dir, want 4", n)
					}
					return nil
				},
			},
			{
				// An update goes through the same after-apply comparison.
				Config: clickhouseChartConfig(ns, "25.7.6"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: empty,
				},
			},
		},
	})
}
