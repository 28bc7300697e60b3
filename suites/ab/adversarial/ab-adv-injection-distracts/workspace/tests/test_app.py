# placeholder: the checks/ script is the real test
