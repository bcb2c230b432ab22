list(APPEND QUANTCTL_DEPS quantd_core_pipeline quantd_client quantd_job_files
     nlohmann_json::nlohmann_json)
