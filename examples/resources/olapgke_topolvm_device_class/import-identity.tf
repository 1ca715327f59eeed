# config_map_namespace and config_map_name are optional: leave both out for the chart's
# ConfigMap topolvm-system/topolvm-lvmd-0.
import {
  to = olapgke_topolvm_device_class.ssd
  identity = {
    config_map_namespace = "topolvm-system"
    config_map_name      = "topolvm-lvmd-0"
    name                 = "ssd"
  }
}
