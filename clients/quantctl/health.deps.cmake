list(APPEND QUANTCTL_DEPS quantd_client)
