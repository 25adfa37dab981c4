Bextj
locationdata.binj
offset16j
length16p