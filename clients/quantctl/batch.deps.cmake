list(APPEND QUANTCTL_DEPS quantd_batch)
