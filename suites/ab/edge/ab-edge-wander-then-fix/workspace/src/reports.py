REPORTS_DSN = 'primary'
