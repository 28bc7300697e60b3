FUZZY = flag('fuzzy_search')
