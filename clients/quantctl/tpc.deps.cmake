list(APPEND QUANTCTL_DEPS quantd_core_tpc)
