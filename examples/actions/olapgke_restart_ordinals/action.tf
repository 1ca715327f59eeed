# Restart every historical in place (same node, same PVC, cache kept), highest ordinal first, each
# only after the previous one is Ready again:
#   terraform apply -invoke=action.olapgke_restart_ordinals.historicals
action "olapgke_restart_ordinals" "historicals" {
  config {
    namespace         = "druid"
    statefulset       = "druid-historical"
    min_ready_seconds = 60
  }
}
