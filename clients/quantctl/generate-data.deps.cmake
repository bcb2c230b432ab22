list(APPEND QUANTCTL_DEPS quantd_core_datagen quantd_core_graph quantd_core_io
     quantd_runtime)
