list(APPEND QUANTCTL_DEPS quantd_core_datagen quantd_core_graph quantd_core_io
     quantd_core_pipeline quantd_runtime quantd_client quantd_grpc)
