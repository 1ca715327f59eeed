# Move ordinals 5 and 4 of the historicals onto the pool the template now selects (switched with
# updateStrategy OnDelete, so nothing else rolled), one at a time, each only after its segments
# are loaded. Run it when the team is ready:
#   terraform apply -invoke=action.olapgke_move_ordinals.historical_5_4
action "olapgke_move_ordinals" "historical_5_4" {
  config {
    namespace        = "druid"
    statefulset      = "druid-historical"
    ordinals         = [5, 4]
    target_node_pool = "historical-b"

    gate {
      name = "segments-loaded"
      http {
        url              = "http://druid-coordinator.druid.svc:8081/druid/coordinator/v1/loadstatus?full"
        expect_json_path = "{._default_tier}"
        expect_value     = "0"
      }
      timeout = "45m"
    }
  }
}
