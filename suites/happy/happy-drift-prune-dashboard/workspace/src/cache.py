# placeholder: no cache layer yet
