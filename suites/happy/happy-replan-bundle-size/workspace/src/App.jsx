import React from 'react';
import Charts from './charts/Charts';
import { day } from './format';

export default function App({ data }) {
  return (<main><h1>Ops {day(Date.now())}</h1><Charts data={data} /></main>);
}
